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

func mustProblem(tb testing.TB, c *chainplan.Chain, opts pipeplan.Options) *pipeline.Problem {
	tb.Helper()
	pr, err := pipeline.NewProblem(c, opts)
	if err != nil {
		tb.Fatal(err)
	}
	return pr
}

// mustSolve solves and checks the plan with the validator.
func mustSolve(tb testing.TB, pr *pipeline.Problem) *pipeplan.Plan {
	tb.Helper()
	p, err := contiguous.Solve(pr)
	if err != nil {
		tb.Fatal(err)
	}
	if rep := pipeline.Validate(pr, p); !rep.Valid {
		tb.Fatalf("invalid plan: %v", rep.Issues)
	}
	if !p.Contiguous || p.Algo != "contiguous" {
		tb.Fatalf("contiguous = %v, algo = %q", p.Contiguous, p.Algo)
	}
	return p
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

const ample = 1 << 40

// TestAnchors checks the exact anchors of spec §6.4 that concern contiguous plans.
func TestAnchors(t *testing.T) {
	noComm := pipeplan.Options{GPUs: 2, MemoryBytes: ample, Bandwidth: 1, NoTemporaries: true}
	t.Run("A1", func(t *testing.T) {
		// Costs (1,2,1) on P = 2: the best contiguous period is 3 (T:l.2632).
		if p := mustSolve(t, mustProblem(t, pipechains.Costs(1, 2, 1), noComm)); p.Period != 3 {
			t.Errorf("period = %g, want 3", p.Period)
		}
	})
	t.Run("A2", func(t *testing.T) {
		// Weights (1,2,1), M = 2, P = 2, the chapter 5 model (one copy, no activations):
		// no contiguous allocation fits (Lemma 10); 3 is the smallest memory that does.
		c := pipechains.Chain([]float64{1, 1, 1}, []float64{1, 1, 1}, []int64{1, 2, 1}, nil)
		pr := mustProblem(t, c, pipeplan.Options{GPUs: 2, MemoryBytes: 2, Bandwidth: 1, WeightCopies: 1, NoTemporaries: true})
		_, err := contiguous.Solve(pr)
		var ie *pipeplan.InfeasibleError
		if !errors.As(err, &ie) || !errors.Is(err, chainplan.ErrInfeasible) {
			t.Fatalf("err = %v, want an InfeasibleError", err)
		}
		if ie.MinMemoryBytes != 3 || ie.LowerBound {
			t.Errorf("smallest memory = %d (lower bound %v), want 3", ie.MinMemoryBytes, ie.LowerBound)
		}
		mustSolve(t, pr.WithMemory(3))
	})
	t.Run("A3", func(t *testing.T) {
		// The Theorem 17 chain for k = 2 on P = 5: the contiguous optimum is 3.2 (spec
		// §2.10 E2, by brute force), 2k−1+ε.
		c := pipechains.Costs(2, .2, 1, .2, 2, .2, 1, .2, 2, .2, 1)
		pr := mustProblem(t, c, pipeplan.Options{GPUs: 5, MemoryBytes: ample, Bandwidth: 1, NoTemporaries: true})
		if p := mustSolve(t, pr); !near(p.Period, 3.2) {
			t.Errorf("period = %g, want 3.2", p.Period)
		}
	})
	t.Run("A4", func(t *testing.T) {
		// Theorem 18: k layers of cost 1 and weight M−1, one of cost k and weight M, k of
		// cost k−1 and weight 1, P = k+2, one weight copy: contiguous period ≥ k(k−1)
		// (non-contiguous: k).
		for k := 2; k <= 4; k++ {
			m := int64(k)
			var cost []float64
			var w []int64
			for range k {
				cost, w = append(cost, 1), append(w, m-1)
			}
			cost, w = append(cost, float64(k)), append(w, m)
			for range k {
				cost, w = append(cost, float64(k-1)), append(w, 1)
			}
			c := pipechains.Chain(half(cost), half(cost), w, nil)
			pr := mustProblem(t, c, pipeplan.Options{GPUs: k + 2, MemoryBytes: m, Bandwidth: 1, WeightCopies: 1, NoTemporaries: true})
			p := mustSolve(t, pr)
			if p.Period < float64(k*(k-1)) || !near(p.Period, bruteForce(pr)) {
				t.Errorf("k = %d: period = %g, want ≥ %d and the brute force %g", k, p.Period, k*(k-1), bruteForce(pr))
			}
		}
	})
	t.Run("E3", func(t *testing.T) {
		// Spec §2.10 E3: L = 4, u_F = u_B = 1, a = 1, W = 0, P = 2, M = 5, input model: the
		// contiguous allocation {1},{2,3,4} fits at T = 6, and no contiguous one does better.
		one := []float64{1, 1, 1, 1}
		c := pipechains.Chain(one, one, nil, []int64{1, 1, 1, 1, 1})
		pr := mustProblem(t, c, pipeplan.Options{GPUs: 2, MemoryBytes: 5, Bandwidth: 1e6,
			ActivationModel: pipeplan.ActivationsInput, NoTemporaries: true})
		p := mustSolve(t, pr)
		if p.Period != 6 || len(p.Stages) != 2 || p.Stages[0].Last != 1 {
			t.Errorf("period %g with stages %v, want 6 with {1},{2,3,4}", p.Period, p.Stages)
		}
	})
}

func half(cost []float64) []float64 {
	h := make([]float64, len(cost))
	for i, c := range cost {
		h[i] = c / 2
	}
	return h
}

// randomProblem draws a chain of 1..8 layers on 1..5 devices with a memory between the
// smallest contiguous one and twice it, and a bandwidth that makes links matter.
func randomProblem(tb testing.TB, rng *rand.Rand) *pipeline.Problem {
	c := pipechains.Random(rng, 1+rng.IntN(8))
	opts := pipeplan.Options{GPUs: 1 + rng.IntN(5), Bandwidth: 20 + 200*rng.Float64(),
		WeightCopies: 2 + rng.IntN(2)}
	if rng.IntN(2) == 0 {
		opts.ActivationModel = pipeplan.ActivationsInput
	}
	pr := mustProblem(tb, c, opts)
	need, _ := contiguous.MinMemory(pr)
	return pr.WithMemory(need - 5 + rng.Int64N(need+10))
}

// TestBruteForce compares Solve with the exhaustive search over every contiguous
// allocation on random chains: the same period, the same refusals, every plan valid.
func TestBruteForce(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 600
	}
	rng := rand.New(rand.NewPCG(12, 1))
	for i := range n {
		pr := randomProblem(t, rng)
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			want := bruteForce(pr)
			p, err := contiguous.Solve(pr)
			if math.IsInf(want, 1) {
				var ie *pipeplan.InfeasibleError
				if !errors.As(err, &ie) {
					t.Fatalf("brute force finds no plan, Solve: %v", err)
				}
				if ie.MinMemoryBytes <= pr.Options().MemoryBytes {
					t.Fatalf("refused with a smallest memory %d ≤ M = %d", ie.MinMemoryBytes, pr.Options().MemoryBytes)
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
		})
	}
}

// TestMinMemory checks MinMemory against a search over memory with the brute force, and
// that Solve succeeds exactly from there.
func TestMinMemory(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 2))
	for i := range 300 {
		pr := randomProblem(t, rng)
		got, _ := contiguous.MinMemory(pr)
		if want := bruteMinMemory(pr); got != want {
			t.Fatalf("case %d: MinMemory = %d, brute force %d", i, got, want)
		}
		mustSolve(t, pr.WithMemory(got))
		if _, err := contiguous.Solve(pr.WithMemory(got - 1)); !errors.Is(err, chainplan.ErrInfeasible) {
			t.Fatalf("case %d: one byte below the smallest memory: %v", i, err)
		}
	}
}

// TestAmpleMemory: with memory that binds nothing, Solve reaches the optimum without a
// memory limit, the smallest largest load over the contiguous allocations.
func TestAmpleMemory(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 3))
	for i := range 1000 {
		pr := randomProblem(t, rng).WithMemory(ample)
		if p, want := mustSolve(t, pr), bruteUnconstrained(pr); !near(p.Period, want) {
			t.Fatalf("case %d: period = %.12g, unconstrained optimum %.12g", i, p.Period, want)
		}
	}
}
