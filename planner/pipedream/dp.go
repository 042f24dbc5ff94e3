package pipedream

import (
	"math"
	"slices"

	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/pipeline"
)

// Estimate names PipeDream's memory estimate of a stage.
type Estimate string

// The estimates (see the package comment).
const (
	EstimateCode Estimate = "code"
	Estimate1F1B Estimate = "1f1b"
)

// Options configures the baseline. The zero value is PipeDream's public code.
type Options struct {
	// Estimate is the memory estimate of the partitioning DP ("" means EstimateCode).
	Estimate Estimate
}

// estimator computes est(i, j, m), the memory of stage (i..j) as the m-th stage from the
// input, in bytes, in O(1).
type estimator struct {
	pr     *pipeline.Problem
	opts   Options
	sumOut []int64 // Σ_{ℓ≤j} a_ℓ
}

func newEstimator(pr *pipeline.Problem, opts Options) *estimator {
	e := &estimator{pr: pr, opts: opts, sumOut: make([]int64, pr.L()+1)}
	for l := 1; l <= pr.L(); l++ {
		e.sumOut[l] = e.sumOut[l-1] + pr.Out(l)
	}
	return e
}

func (e *estimator) est(i, j, m int) int64 {
	p := e.pr.Options().GPUs
	if e.opts.Estimate == Estimate1F1B {
		return e.pr.StageMemory(i, j, p-m+1)
	}
	return int64(p-m) * (e.sumOut[j] - e.sumOut[i-1] + e.pr.Weights(i, j))
}

// partition runs PipeDream's DP with the estimates of e and the memory limit of pr and
// returns the stages it chooses (stage k on device k) and its predicted period A[L][P],
// or nil when no partition satisfies the estimate. O(L²·P).
func partition(pr *pipeline.Problem, e *estimator) ([]pipeplan.Stage, float64) {
	l, p, mem := pr.L(), pr.Options().GPUs, pr.Options().MemoryBytes
	inf := math.Inf(1)
	// a[m][j] for 1 ≤ m ≤ P, 1 ≤ j ≤ L; from[m][j] is the k of the last split, 0 for a
	// single stage, −1 when the value comes from m−1 machines.
	a := make([][]float64, p+1)
	from := make([][]int, p+1)
	for m := range a {
		a[m] = make([]float64, l+1)
		from[m] = make([]int, l+1)
		for j := range a[m] {
			a[m][j] = inf
		}
	}
	for j := 1; j <= l; j++ {
		if e.est(1, j, 1) <= mem {
			a[1][j] = max(pr.U(1, j), pr.Comm(j))
		}
	}
	for m := 2; m <= p; m++ {
		for j := 1; j <= l; j++ {
			for k := 1; k < j; k++ {
				if math.IsInf(a[m-1][k], 1) || e.est(k+1, j, m) > mem {
					continue
				}
				if v := max(a[m-1][k], pr.U(k+1, j), pr.Comm(k), pr.Comm(j)); v < a[m][j] {
					a[m][j], from[m][j] = v, k
				}
			}
			if a[m-1][j] < a[m][j] {
				a[m][j], from[m][j] = a[m-1][j], -1
			}
		}
	}
	if math.IsInf(a[p][l], 1) {
		return nil, inf
	}
	var rev []pipeplan.Stage
	for m, j := p, l; j > 0; m-- {
		switch k := from[m][j]; {
		case k < 0:
		case m == 1:
			rev = append(rev, pipeplan.Stage{First: 1, Last: j})
			j = 0
		default:
			rev = append(rev, pipeplan.Stage{First: k + 1, Last: j})
			j = k
		}
	}
	stages := make([]pipeplan.Stage, len(rev))
	for k := range rev {
		stages[k] = rev[len(rev)-1-k]
		stages[k].GPU = k
	}
	return stages, a[p][l]
}

// thresholds returns the sorted distinct memories at which the DP's admissible stages
// change: every est(i, j, m).
func thresholds(e *estimator) []int64 {
	l, p := e.pr.L(), e.pr.Options().GPUs
	seen := map[int64]bool{}
	var out []int64
	for m := 1; m <= p; m++ {
		for i := 1; i <= l; i++ {
			for j := i; j <= l; j++ {
				if v := e.est(i, j, m); !seen[v] {
					seen[v] = true
					out = append(out, v)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}
