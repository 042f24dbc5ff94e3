package contiguous_test

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
	"github.com/chainplan/chainplan/planner/pipeline"
)

// bruteForceModes returns the smallest BestPeriod over every contiguous allocation and
// every way of running its stages: recording, or recomputing at any budget where the
// stage's backward gets faster (RecomputeBudgets). The planner gives a recomputing stage
// the largest budget its device leaves, which is one of these, so the two must agree.
func bruteForceModes(pr *pipeline.Problem) float64 {
	best := math.Inf(1)
	partitions(pr.L(), pr.Options().GPUs, func(st []pipeplan.Stage) {
		options := make([][]pipeplan.Stage, len(st))
		for k, s := range st {
			options[k] = []pipeplan.Stage{s}
			for _, b := range pr.RecomputeBudgets(s.First, s.Last) {
				rs, err := pr.RecomputeStage(s.First, s.Last, s.GPU, b)
				if err != nil {
					panic(err)
				}
				options[k] = append(options[k], rs)
			}
		}
		pick := make([]pipeplan.Stage, len(st))
		var rec func(k int)
		rec = func(k int) {
			if k == len(st) {
				if t, ok := pipeline.BestPeriod(pr, pick); ok {
					best = min(best, t)
				}
				return
			}
			for _, o := range options[k] {
				pick[k] = o
				rec(k + 1)
			}
		}
		rec(0)
	})
	return best
}

// checkpointProblem draws a chain of 1..5 layers on 1..3 devices with checkpointing, its
// memory between half the smallest contiguous memory without recomputation and that.
func checkpointProblem(tb testing.TB, rng *rand.Rand) *pipeline.Problem {
	c := pipechains.Random(rng, 1+rng.IntN(5))
	opts := pipeplan.Options{GPUs: 1 + rng.IntN(3), Bandwidth: 20 + 200*rng.Float64(), Checkpoint: true}
	plain := mustProblem(tb, c, pipeplan.Options{GPUs: opts.GPUs, Bandwidth: opts.Bandwidth})
	need, _ := contiguous.MinMemory(plain)
	return mustProblem(tb, c, opts).WithMemory(need/2 + rng.Int64N(need/2+10))
}

// TestCheckpointBruteForce compares Solve with checkpointing inside stages against the
// exhaustive search over allocations and stage modes: the same period, the same
// refusals, every plan valid; and never slower than without checkpointing.
func TestCheckpointBruteForce(t *testing.T) {
	n := 300
	if testing.Short() {
		n = 120
	}
	rng := rand.New(rand.NewPCG(12, 9))
	recomputed := 0
	for i := range n {
		pr := checkpointProblem(t, rng)
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			want := bruteForceModes(pr)
			p, err := contiguous.Solve(pr)
			if math.IsInf(want, 1) {
				if !errors.Is(err, chainplan.ErrInfeasible) {
					t.Fatalf("brute force finds no plan, Solve: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("brute force reaches %g, Solve: %v", want, err)
			}
			if rep := pipeline.Validate(pr, p); !rep.Valid {
				t.Fatalf("invalid plan: %v", rep.Issues)
			}
			if !near(p.Period, want) {
				t.Fatalf("period = %.12g, brute force %.12g (stages %v)", p.Period, want, p.Stages)
			}
			for _, s := range p.Stages {
				if s.Recompute != nil {
					recomputed++
					break
				}
			}
			o := pr.Options()
			o.Checkpoint = false
			plain := mustProblem(t, pr.Chain(), o)
			if q, err := contiguous.Solve(plain); err == nil && q.Period < p.Period*(1-1e-9) {
				t.Fatalf("checkpointing made it slower: %g against %g", p.Period, q.Period)
			}
		})
	}
	if recomputed < n/10 {
		t.Fatalf("only %d of %d plans recompute: the comparison hardly tests the modes", recomputed, n)
	}
}

// TestCheckpointMinMemory checks MinMemory with checkpointing against a search over
// memory with the exhaustive search, and that Solve succeeds exactly from there.
func TestCheckpointMinMemory(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 10))
	lower := 0
	for i := range 60 {
		pr := checkpointProblem(t, rng)
		got, _ := contiguous.MinMemory(pr)
		lo, hi := int64(0), int64(1)
		for math.IsInf(bruteForceModes(pr.WithMemory(hi)), 1) {
			hi *= 2
		}
		for lo < hi {
			mid := lo + (hi-lo)/2
			if math.IsInf(bruteForceModes(pr.WithMemory(mid)), 1) {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		if got != lo {
			t.Fatalf("case %d: MinMemory = %d, brute force %d", i, got, lo)
		}
		mustSolve(t, pr.WithMemory(got))
		if _, err := contiguous.Solve(pr.WithMemory(got - 1)); !errors.Is(err, chainplan.ErrInfeasible) {
			t.Fatalf("case %d: one byte below the smallest memory: %v", i, err)
		}
		o := pr.Options()
		o.Checkpoint = false
		if plain, _ := contiguous.MinMemory(mustProblem(t, pr.Chain(), o)); got < plain {
			lower++
		}
	}
	if lower == 0 {
		t.Fatal("checkpointing never lowered the smallest memory")
	}
}
