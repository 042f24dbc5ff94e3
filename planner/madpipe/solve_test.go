package madpipe

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/contiguous"
	"github.com/chainplan/chainplan/planner/internal/pipechains"
	"github.com/chainplan/chainplan/planner/milp"
	"github.com/chainplan/chainplan/planner/pipeline"
)

func mustSolve(tb testing.TB, pr *pipeline.Problem, tr *Trace) *pipeplan.Plan {
	tb.Helper()
	p, err := Solve(pr, Options{TimeLimit: testLimit, Trace: tr})
	if err != nil {
		tb.Fatal(err)
	}
	if err := pipeline.Check(pr, p); err != nil {
		tb.Fatal(err)
	}
	return p
}

// TestAnchors checks the anchors of spec §6.4 that concern MadPipe.
func TestAnchors(t *testing.T) {
	noLimits := func(p int) pipeplan.Options {
		return pipeplan.Options{GPUs: p, MemoryBytes: ample, Bandwidth: 1, NoTemporaries: true}
	}
	t.Run("A1", func(t *testing.T) {
		// Costs (1,2,1) on P = 2: contiguous 3, non-contiguous 2 (T:l.2632).
		p := mustSolve(t, mustProblem(t, pipechains.Costs(1, 2, 1), noLimits(2)), nil)
		if p.Chosen != ChosenMadPipe || !near(p.Period, 2) || p.Contiguous {
			t.Fatalf("period %g chosen %q stages %v, want 2 from madpipe", p.Period, p.Chosen, p.Stages)
		}
	})
	t.Run("A2", func(t *testing.T) {
		// Weights (1,2,1), M = 2, P = 2, one weight copy, no activations (Lemma 10): no
		// contiguous allocation fits; {1,3},{2} does, at the special device's load 4.
		c := pipechains.Chain([]float64{1, 1, 1}, []float64{1, 1, 1}, []int64{1, 2, 1}, nil)
		pr := mustProblem(t, c, pipeplan.Options{GPUs: 2, MemoryBytes: 2, Bandwidth: 1, WeightCopies: 1, NoTemporaries: true})
		if _, err := contiguous.Solve(pr); !errors.Is(err, chainplan.ErrInfeasible) {
			t.Fatalf("contiguous: %v, want infeasible", err)
		}
		p := mustSolve(t, pr, nil)
		if p.Chosen != ChosenMadPipe || !near(p.Period, 4) || len(p.Stages) != 3 || p.Stages[0].GPU != p.Stages[2].GPU {
			t.Fatalf("period %g stages %v, want 4 with {1,3} on one device", p.Period, p.Stages)
		}
	})
	t.Run("A3", func(t *testing.T) {
		// The Theorem 17 chain for k = 2 on P = 5: MadPipe-DP 2.2, and phase 2 schedules the
		// allocation at its load (no memory limit); the contiguous optimum is 3.2.
		tr := &Trace{}
		p := mustSolve(t, mustProblem(t, pipechains.Costs(2, .2, 1, .2, 2, .2, 1, .2, 2, .2, 1), noLimits(5)), tr)
		if !near(tr.Predicted, 2.2) || p.Chosen != ChosenMadPipe || !near(p.Period, 2.2) {
			t.Fatalf("predicted %g, period %g chosen %q; want 2.2 and 2.2 from madpipe", tr.Predicted, p.Period, p.Chosen)
		}
	})
	t.Run("A4", func(t *testing.T) {
		// The Theorem 18 chain for k = 3 (one weight copy, no activations, M = k, P = k+2):
		// k layers of cost 1 and weight M−1, one of cost k and weight M, k of cost k−1 and
		// weight 1. Contiguous ≥ k(k−1) = 6; the non-contiguous optimum k = 3 pairs layers
		// on several devices, outside MadPipe's class, whose best is 4 ({3} and {5} on the
		// special device): exact phase 1 finds it; on the grids, m_P rounds 1 up to 1.2 and
		// the special device's 2 + 1 bytes no longer fit, so MadPipe lands in [4, 6].
		const k, m = 3, 3
		var f, w []float64
		var wt []int64
		for range k {
			f, wt = append(f, 0.5), append(wt, m-1)
		}
		f, wt = append(f, k/2.0), append(wt, m)
		for range k {
			f, wt = append(f, (k-1)/2.0), append(wt, 1)
		}
		w = f
		pr := mustProblem(t, pipechains.Chain(f, w, wt, nil), pipeplan.Options{GPUs: k + 2, MemoryBytes: m, Bandwidth: 1, WeightCopies: 1, NoTemporaries: true})
		c, err := contiguous.Solve(pr)
		if err != nil || c.Period < k*(k-1) {
			t.Fatalf("contiguous: %v, %v; want at least %d", c, err, k*(k-1))
		}
		if its, err := phase1(pr, true); err != nil || len(its) == 0 || !near(its[0].estimate(), 4) {
			t.Fatalf("exact phase 1: %v, %v, want 4", its, err)
		}
		p := mustSolve(t, pr, nil)
		t.Logf("madpipe %g (%s, stages %v), contiguous %g", p.Period, p.Chosen, p.Stages, c.Period)
		if p.Period < 4-1e-9 || p.Period > c.Period+1e-9 {
			t.Fatalf("period %g (chosen %q), want in [4, %g]", p.Period, p.Chosen, c.Period)
		}
	})
	t.Run("E3", func(t *testing.T) {
		// Spec §2.10 E3: phase 1 predicts 4 with {1,2} on the special device, but that
		// allocation needs T ≥ 8; the contiguous {1},{2,3,4} fits at 6 and wins.
		one := []float64{1, 1, 1, 1}
		c := pipechains.Chain(one, one, nil, []int64{1, 1, 1, 1, 1})
		pr := mustProblem(t, c, pipeplan.Options{GPUs: 2, MemoryBytes: 5, Bandwidth: 1e6, ActivationModel: pipeplan.ActivationsInput, NoTemporaries: true})
		tr := &Trace{}
		p := mustSolve(t, pr, tr)
		// On the paper's grids the prediction is 4.0039 (exact mode: 4, TestWorkedExamples).
		if p.Chosen != ChosenContiguous || !near(p.Period, 6) || p.PredictedPeriod < 4 || p.PredictedPeriod > 4.01 {
			t.Fatalf("period %g chosen %q predicted %g; want 6 from contiguous, about 4 predicted", p.Period, p.Chosen, p.PredictedPeriod)
		}
		// Scheduled alone, the allocation reaches 8 exactly (Theorem 15: NCA 1 on both).
		solver, err := milp.FindHighs()
		if err != nil {
			t.Fatal(err)
		}
		alone := schedule(pr, []pipeplan.Stage{{First: 1, Last: 2, GPU: 0}, {First: 3, Last: 4, GPU: 1}}, math.Inf(1), solver, testLimit, &Trace{})
		if alone == nil || math.Abs(alone.Period-8) > 1e-5 { // 8 plus the two 1e-6 transfers
			t.Fatalf("the allocation {1,2},{3,4} alone: %v, want period 8", alone)
		}
	})
}

// TestNoSolver: without a solver, Solve returns the best contiguous plan, marked as such,
// and its trace says how to install one.
func TestNoSolver(t *testing.T) {
	t.Setenv(milp.EnvHighs, "/nonexistent/highs")
	pr := mustProblem(t, pipechains.Costs(1, 2, 1), pipeplan.Options{GPUs: 2, MemoryBytes: ample, Bandwidth: 1, NoTemporaries: true})
	tr := &Trace{}
	p := mustSolve(t, pr, tr)
	if p.Chosen != ChosenContiguous || !near(p.Period, 3) {
		t.Fatalf("period %g chosen %q, want the contiguous 3", p.Period, p.Chosen)
	}
	if len(tr.Notes) != 1 || !containsAll(tr.Notes[0], "pip install highsbox", "contiguous") {
		t.Fatalf("notes %q, want the install hint", tr.Notes)
	}
	if p.Fallback != pipeplan.FallbackNoSolver {
		t.Fatalf("fallback %q, want %q", p.Fallback, pipeplan.FallbackNoSolver)
	}
	// With a solver the same problem gets MadPipe's plan, and no fallback is marked.
	t.Setenv(milp.EnvHighs, "")
	if withSolver := mustSolve(t, pr, &Trace{}); withSolver.Fallback != "" {
		t.Fatalf("fallback %q with a solver, want none", withSolver.Fallback)
	}
}

// TestRequireSolver: RequireSolver turns a missing solver into an error wrapping
// milp.ErrNoSolver, for Solve and MinMemory, even where phase 1 finds nothing to schedule;
// with a solver it changes nothing.
func TestRequireSolver(t *testing.T) {
	pr := mustProblem(t, pipechains.Costs(1, 2, 1), pipeplan.Options{GPUs: 2, MemoryBytes: ample, Bandwidth: 1})
	one := mustProblem(t, pipechains.Costs(1, 2, 1), pipeplan.Options{GPUs: 1, MemoryBytes: ample, Bandwidth: 1})
	strict := Options{TimeLimit: testLimit, RequireSolver: true}
	want, err := Solve(pr, strict)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(milp.EnvHighs, "/nonexistent/highs")
	for name, pr := range map[string]*pipeline.Problem{"P=2": pr, "P=1": one} {
		if p, err := Solve(pr, strict); !errors.Is(err, milp.ErrNoSolver) || !strings.Contains(err.Error(), "refuses") {
			t.Errorf("%s: Solve = %v, %v; want an error wrapping milp.ErrNoSolver", name, p, err)
		}
		if m, err := MinMemory(pr, strict); !errors.Is(err, milp.ErrNoSolver) {
			t.Errorf("%s: MinMemory = %d, %v; want an error wrapping milp.ErrNoSolver", name, m, err)
		}
	}
	// A solver given by the caller is enough.
	t.Setenv(milp.EnvHighs, "")
	h, err := milp.FindHighs()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(milp.EnvHighs, "/nonexistent/highs")
	strict.Solver = h
	if got, err := Solve(pr, strict); err != nil || !near(got.Period, want.Period) || got.Fallback != "" {
		t.Fatalf("with the solver given: %v, %v; want period %g", got, err, want.Period)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}

// TestMinMemory: Solve plans at MinMemory's answer, which is never above the contiguous
// minimum; on anchor A2 it is below it (the non-contiguous {1,3},{2} fits M = 2).
func TestMinMemory(t *testing.T) {
	c := pipechains.Chain([]float64{1, 1, 1}, []float64{1, 1, 1}, []int64{1, 2, 1}, nil)
	pr := mustProblem(t, c, pipeplan.Options{GPUs: 2, MemoryBytes: 2, Bandwidth: 1, WeightCopies: 1, NoTemporaries: true})
	got, err := MinMemory(pr, Options{TimeLimit: testLimit})
	if err != nil || got != 2 {
		t.Fatalf("A2: MinMemory = %d, %v; want 2 (contiguous needs 3)", got, err)
	}
	rng := rand.New(rand.NewPCG(12, 15))
	for i := range 40 {
		pr := randomProblem(t, rng)
		got, err := MinMemory(pr, Options{TimeLimit: testLimit})
		if err != nil {
			t.Fatal(err)
		}
		need, _ := contiguous.MinMemory(pr)
		if got > need || got < pipeline.MemoryLowerBound(pr) {
			t.Fatalf("case %d: MinMemory = %d outside [%d, %d]", i, got, pipeline.MemoryLowerBound(pr), need)
		}
		mustSolve(t, pr.WithMemory(got), nil)
	}
}

// TestRetriesWithinLessMemory: on vgg16 (P = 2, 12 GB/s) phase 1's allocation at 22 GB
// (and 24) has no schedule within that memory (its estimate of the special device's
// memory is optimistic), while the one it plans at 20 GB has. Solve plans phase 1 again
// within less memory, so 22 GB does not give a slower plan than 20 GB.
func TestRetriesWithinLessMemory(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "examples", "vgg16.json"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := chainplan.ParseChain(data)
	if err != nil {
		t.Fatal(err)
	}
	plan := func(memory int64) (*pipeplan.Plan, *Trace) {
		tr := &Trace{}
		pr := mustProblem(t, c, pipeplan.Options{GPUs: 2, MemoryBytes: memory, Bandwidth: 12e9})
		return mustSolve(t, pr, tr), tr
	}
	base, _ := plan(20e9)
	if base.Chosen != ChosenMadPipe {
		t.Fatalf("20 GB: chosen %q, want MadPipe's own plan", base.Chosen)
	}
	for _, m := range []int64{22e9} {
		p, tr := plan(m)
		if p.Chosen != ChosenMadPipe || p.Period > base.Period*(1+1e-9) {
			t.Errorf("%d B: chosen %q period %g, want MadPipe's plan no slower than %g at 20 GB", m, p.Chosen, p.Period, base.Period)
		}
		if len(tr.Attempts) < 2 || tr.Attempts[0].Period != 0 {
			t.Errorf("%d B: attempts %+v, want the full memory's allocation unscheduled, then a retry", m, tr.Attempts)
		}
	}
}
