package pipesim

import "slices"

// The closed forms the papers give for pipeline schedules (spec §6.2, §4.4), for comparison
// with the simulation; f and b are each stage's forward and backward time of one
// micro-batch, n the micro-batches of one mini-batch (gas), and there is no communication.

// GPipeMakespan is the exact makespan of one GPipe mini-batch with unlimited buffers and no
// communication (spec §5.4 S-1, [D]): Σf + (n−1)·max f + Σb + (n−1)·max b.
func GPipeMakespan(f, b []float64, n int) float64 {
	return sum(f) + float64(n-1)*slices.Max(f) + sum(b) + float64(n-1)*slices.Max(b)
}

// AMPMakespan is AMP's Eq. 5, (n−1)·max(f+b) + Σ(f+b): a lower bound of GPipe's makespan,
// the usual 1F1B approximation (spec §6.2).
func AMPMakespan(f, b []float64, n int) float64 {
	var worst float64
	for i := range f {
		worst = max(worst, f[i]+b[i])
	}
	return float64(n-1)*worst + sum(f) + sum(b)
}

// ParaDLMakespan is ParaDL's Eq. 12 for one iteration in segment units, (p+n−1)·(max f +
// max b) with p stages: an upper bound of GPipe's makespan (spec §2.5.5, §6.2).
func ParaDLMakespan(f, b []float64, n int) float64 {
	return float64(len(f)+n-1) * (slices.Max(f) + slices.Max(b))
}

// PaperVersionDifference is TiMePReSt's closed form of the version difference for w
// workers and n micro-batches, v = ⌊(w+n−2)/n⌋ (Eqs. 20, 21, 25; spec §4.4). It rests on a
// heuristic and first disagrees with the schedule at w = 2n+2 (spec §4.6).
func PaperVersionDifference(w, n int) int { return (w + n - 2) / n }

func sum(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v
	}
	return s
}
