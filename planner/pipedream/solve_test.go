package pipedream_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/contiguous"
	"github.com/chainplan/chainplan/planner/internal/pipechains"
	"github.com/chainplan/chainplan/planner/pipedream"
	"github.com/chainplan/chainplan/planner/pipeline"
)

var estimates = []pipedream.Options{{}, {Estimate: pipedream.Estimate1F1B}}

// estimate is the spec's est(i, j, m), written out from §4.5 for the brute force.
func estimate(pr *pipeline.Problem, o pipedream.Options, i, j, m int) int64 {
	p := pr.Options().GPUs
	if o.Estimate == pipedream.Estimate1F1B {
		return pr.StageMemory(i, j, p-m+1)
	}
	var sum int64
	for l := i; l <= j; l++ {
		sum += pr.Out(l) + pr.Layer(l).Param
	}
	return int64(p-m) * sum
}

// bruteDP returns PipeDream's DP value by enumeration: every partition into stages, each
// given an increasing machine index starting at 1 (use_fewer_machines skips indices),
// stage s admitted when est(stage, index) fits; the value is the largest stage load or
// transfer. +Inf when nothing is admitted.
func bruteDP(pr *pipeline.Problem, o pipedream.Options) float64 {
	l, p, mem := pr.L(), pr.Options().GPUs, pr.Options().MemoryBytes
	best := math.Inf(1)
	var rec func(first, m int, load float64)
	rec = func(first, m int, load float64) {
		if first > l {
			best = min(best, load)
			return
		}
		for last := first; last <= l; last++ {
			v := max(load, pr.U(first, last), pr.Comm(first-1), pr.Comm(last))
			next := m + 1
			if first == 1 {
				next = 1
			}
			for ; next <= p; next++ {
				if estimate(pr, o, first, last, next) <= mem {
					rec(last+1, next, v)
				}
				if first == 1 {
					break // the first stage is machine 1
				}
			}
		}
	}
	rec(1, 0, 0)
	return best
}

func randomProblem(tb testing.TB, rng *rand.Rand, maxL int) *pipeline.Problem {
	tb.Helper()
	opts := pipeplan.Options{GPUs: 1 + rng.IntN(5), Bandwidth: 20 + 200*rng.Float64(),
		WeightCopies: 2 + rng.IntN(2)}
	if rng.IntN(2) == 0 {
		opts.ActivationModel = pipeplan.ActivationsInput
	}
	pr, err := pipeline.NewProblem(pipechains.Random(rng, 1+rng.IntN(maxL)), opts)
	if err != nil {
		tb.Fatal(err)
	}
	need, _ := contiguous.MinMemory(pr)
	return pr.WithMemory(need - 20 + rng.Int64N(2*need+40))
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// TestSolve, on random chains with both estimates: the DP's predicted period equals the
// brute force of the recurrence; every plan validates and is no faster than the
// contiguous optimum (contiguous ≤ pipedream), and its period is no smaller than the
// prediction; a refusal names the smallest memory at which Solve succeeds (above M, or
// below it when a larger memory changed the partition into one that does not fit).
func TestSolve(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 600
	}
	rng := rand.New(rand.NewPCG(4, 5))
	var plans, refused, slower, below int
	for i := range n {
		o := estimates[i%2]
		pr := randomProblem(t, rng, 7)
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			p, err := pipedream.Solve(pr, o)
			c, cerr := contiguous.Solve(pr)
			if err != nil {
				var ie *pipeplan.InfeasibleError
				if !errors.As(err, &ie) || !errors.Is(err, chainplan.ErrInfeasible) || ie.MinMemoryBytes == pr.Options().MemoryBytes {
					t.Fatalf("refusal %v", err)
				}
				if ie.MinMemoryBytes < pr.Options().MemoryBytes {
					below++ // more memory, another partition that does not fit
				}
				if _, err := pipedream.Solve(pr.WithMemory(ie.MinMemoryBytes), o); err != nil {
					t.Fatalf("refused at %d with %v, and at that memory: %v", pr.Options().MemoryBytes, ie, err)
				}
				refused++
				return
			}
			plans++
			if rep := pipeline.Validate(pr, p); !rep.Valid {
				t.Fatalf("invalid plan: %v", rep.Issues)
			}
			if want := bruteDP(pr, o); !near(p.PredictedPeriod, want) {
				t.Fatalf("predicted %.12g, brute force of the DP %.12g", p.PredictedPeriod, want)
			}
			if p.Period < p.PredictedPeriod*(1-1e-9) {
				t.Fatalf("period %g below the DP's %g", p.Period, p.PredictedPeriod)
			}
			if cerr != nil || c.Period > p.Period*(1+1e-9) {
				t.Fatalf("contiguous %v (%v) beaten by pipedream %g", c, cerr, p.Period)
			}
			if c.Period < p.Period*(1-1e-9) {
				slower++
			}
		})
	}
	if plans < n/3 || refused < n/20 || slower < n/40 {
		t.Errorf("too few cases: %d plans (%d slower than contiguous), %d refused", plans, slower, refused)
	}
	t.Logf("%d plans (%d slower than contiguous), %d refused (%d below the smallest memory)", plans, slower, refused, refused-below)
}

// TestMinMemory scans every memory below MinMemory on small chains: Solve refuses each
// (PipeDream is not monotone in memory, so no bisection would do), and succeeds at it.
func TestMinMemory(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 6))
	for i := range 60 {
		o := estimates[i%2]
		pr := randomProblem(t, rng, 5)
		got, err := pipedream.MinMemory(pr, o)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pipedream.Solve(pr.WithMemory(got), o); err != nil {
			t.Fatalf("case %d: at MinMemory %d: %v", i, got, err)
		}
		for m := int64(0); m < got; m++ {
			if _, err := pipedream.Solve(pr.WithMemory(m), o); err == nil {
				t.Fatalf("case %d: Solve succeeds at %d below MinMemory %d", i, m, got)
			}
		}
	}
}
