package pipesim_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/chainplan/chainplan/planner/pipesim"
)

// The schedule identities of spec §5.4 (SIM-1, SIM-2, SIM-3, SIM-5).

func near(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// cases is n, or a fifth of it in -short mode (make test runs -race -short).
func cases(n int) int {
	if testing.Short() {
		return n / 5
	}
	return n
}

func randomTimes(rng *rand.Rand, s int) (f, b []float64) {
	for range s {
		f = append(f, 0.05+rng.Float64())
		b = append(b, 0.05+2*rng.Float64())
	}
	return f, b
}

// TestGPipeClosedForm is SIM-1: without communication GPipe's makespan is exactly
// Σf + (n−1)·max f + Σb + (n−1)·max b per mini-batch, and K mini-batches take K times
// that (the flush), on 2,000 random cases (400 with -short).
func TestGPipeClosedForm(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 2))
	for i := range cases(2000) {
		s, n, k := 1+rng.IntN(8), 1+rng.IntN(10), 1+rng.IntN(3)
		f, b := randomTimes(rng, s)
		r := mustSimulate(t, mustSetup(t, f, b, nil, 0, pipesim.SetupOptions{}), pipesim.Options{Schedule: pipesim.GPipe, Microbatches: n, Minibatches: k})
		want := pipesim.GPipeMakespan(f, b, n)
		if !near(r.Makespan, float64(k)*want) || !near(r.Period, want) {
			t.Fatalf("case %d f=%v b=%v N=%d K=%d: makespan %v period %v, closed form %v per mini-batch", i, f, b, n, k, r.Makespan, r.Period, want)
		}
	}
}

// TestUniformStages is SIM-2: with uniform stages GPipe and 1F1B-flush both take
// (N + S − 1)·(f + b) per mini-batch, and the bubble is (S−1)/(N+S−1).
func TestUniformStages(t *testing.T) {
	for s := 1; s <= 8; s++ {
		for n := 1; n <= 12; n++ {
			f, b := slices.Repeat([]float64{1.5}, s), slices.Repeat([]float64{2.25}, s)
			for _, sched := range []pipesim.Schedule{pipesim.GPipe, pipesim.OneFOneBFlush} {
				r := mustSimulate(t, mustSetup(t, f, b, nil, 0, pipesim.SetupOptions{}), pipesim.Options{Schedule: sched, Microbatches: n, Minibatches: 3})
				want := float64(n+s-1) * 3.75
				if !near(r.Period, want) || !near(r.Makespan, 3*want) {
					t.Fatalf("%s S=%d N=%d: period %v makespan %v, want %v per mini-batch", sched, s, n, r.Period, r.Makespan, want)
				}
				if bub := float64(s-1) / float64(n+s-1); !near(r.PerStage[0].Bubble, bub) || !near(r.PerStage[s-1].SteadyBubble, bub) {
					t.Fatalf("%s S=%d N=%d: bubble %v, want %v", sched, s, n, r.PerStage[0].Bubble, bub)
				}
			}
		}
	}
}

// TestFormulaOrdering is SIM-3: AMP's Eq. 5 ≤ GPipe (simulated) ≤ ParaDL's Eq. 12, with
// the spec's example f = [1,3], b = [3,1], gas = 4 giving 20 ≤ 26 ≤ 30, then on 2,000
// random cases.
func TestFormulaOrdering(t *testing.T) {
	f, b := []float64{1, 3}, []float64{3, 1}
	r := mustSimulate(t, mustSetup(t, f, b, nil, 0, pipesim.SetupOptions{}), pipesim.Options{Schedule: pipesim.GPipe, Microbatches: 4, Minibatches: 1})
	if amp, para := pipesim.AMPMakespan(f, b, 4), pipesim.ParaDLMakespan(f, b, 4); amp != 20 || r.Makespan != 26 || para != 30 {
		t.Fatalf("AMP %v, GPipe %v, ParaDL %v; want 20, 26, 30", amp, r.Makespan, para)
	}
	rng := rand.New(rand.NewPCG(25, 3))
	for i := range cases(2000) {
		s, n := 1+rng.IntN(8), 1+rng.IntN(12)
		f, b := randomTimes(rng, s)
		r := mustSimulate(t, mustSetup(t, f, b, nil, 0, pipesim.SetupOptions{}), pipesim.Options{Schedule: pipesim.GPipe, Microbatches: n, Minibatches: 1})
		amp, para := pipesim.AMPMakespan(f, b, n), pipesim.ParaDLMakespan(f, b, n)
		if r.Makespan < amp*(1-1e-12) || r.Makespan > para*(1+1e-12) {
			t.Fatalf("case %d: AMP %v ≤ GPipe %v ≤ ParaDL %v fails", i, amp, r.Makespan, para)
		}
	}
}

// TestCommunicationBound is SIM-5: with transfers on links that overlap the computation,
// GPipe's communication costs at most what ParaDL's Eq. 13 charges, 2·(p+n−2)·max e for p
// stages and n micro-batches (each direction is a flow shop with the transfers as extra
// stations: Σe + (n−1)·max e ≤ (p+n−2)·max e), on 2,000 random cases.
func TestCommunicationBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 5))
	for i := range cases(2000) {
		p, n := 2+rng.IntN(7), 1+rng.IntN(12)
		f, b := randomTimes(rng, p)
		a := make([]int64, p+1)
		var maxE float64
		for j := range a {
			a[j] = rng.Int64N(1000)
			if j >= 1 && j < p {
				maxE = max(maxE, float64(a[j])/1000)
			}
		}
		free := mustSimulate(t, mustSetup(t, f, b, a, 0, pipesim.SetupOptions{}), pipesim.Options{Schedule: pipesim.GPipe, Microbatches: n, Minibatches: 1})
		comm := mustSimulate(t, mustSetup(t, f, b, a, 1000, pipesim.SetupOptions{}), pipesim.Options{Schedule: pipesim.GPipe, Microbatches: n, Minibatches: 1})
		if extra := comm.Makespan - free.Makespan; extra < -1e-9 || extra > 2*float64(p+n-2)*maxE+1e-9 {
			t.Fatalf("case %d (p=%d n=%d max e=%v): communication adds %v, ParaDL's Eq. 13 charges %v", i, p, n, maxE, extra, 2*float64(p+n-2)*maxE)
		}
	}
}

// TestScheduleProperties checks what the schedules promise on random profiled cases:
// 1F1B-flush never holds more micro-batches than GPipe and stage s (0-based) of S holds at
// most min(S−s, N); the synchronous schedules have v = 1; PipeDream's steady v is S with
// one micro-batch per mini-batch (staleness S−1, spec §6.4); 2BW has v = 2 from the second
// mini-batch on and holds two versions.
func TestScheduleProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 7))
	for i := range cases(500) {
		s, n := 1+rng.IntN(6), 1+rng.IntN(8)
		f, b := randomTimes(rng, s)
		su := mustSetup(t, f, b, nil, 0, pipesim.SetupOptions{})
		run := func(sched pipesim.Schedule, n, k int) *pipesim.Result {
			return mustSimulate(t, su, pipesim.Options{Schedule: sched, Microbatches: n, Minibatches: k})
		}
		g, o := run(pipesim.GPipe, n, 4), run(pipesim.OneFOneBFlush, n, 4)
		for st := range s {
			if g.PerStage[st].PeakInflight != n || o.PerStage[st].PeakInflight != min(s-st, n) {
				t.Fatalf("case %d stage %d: in flight gpipe %d, 1f1b %d; want %d and %d", i, st, g.PerStage[st].PeakInflight, o.PerStage[st].PeakInflight, n, min(s-st, n))
			}
		}
		if g.VersionDifference != 1 || o.VersionDifference != 1 || g.MaxStaleness != 0 || o.MaxStaleness != 0 {
			t.Fatalf("case %d: synchronous schedules with v = %d and %d", i, g.VersionDifference, o.VersionDifference)
		}
		if pd := run(pipesim.PipeDreamAsync, 1, 4*s); pd.VersionDifference != s || pd.PerStage[0].WeightVersions != min(s, 4*s) {
			t.Fatalf("case %d: PipeDream v = %d with %d versions at stage 0, want %d", i, pd.VersionDifference, pd.PerStage[0].WeightVersions, s)
		}
		if tb := run(pipesim.TwoBW, max(n, s-1), 6); tb.VersionDifference != min(2, 6) || tb.PerStage[0].WeightVersions > 2 {
			t.Fatalf("case %d: 2BW v = %d with %d versions", i, tb.VersionDifference, tb.PerStage[0].WeightVersions)
		}
	}
}
