package madpipe

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/contiguous"
	"github.com/chainplan/chainplan/planner/internal/pipechains"
	"github.com/chainplan/chainplan/planner/milp"
	"github.com/chainplan/chainplan/planner/pipeline"
)

// testLimit keeps each test's ILPs short; the small chains below solve in far less.
const testLimit = 5 * time.Second

// proofLimit is for the tests that insist on a proven optimum: on a loaded 2-core host a
// schedule that takes a few milliseconds alone has been seen to need 5 s, and HiGHS then
// answers "feasible"; these tests check the model, not the solver's speed.
const proofLimit = 120 * time.Second

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// randomProblem draws a chain of 2..9 layers on 2..5 devices, the memory between the
// lower bound valid for every plan and twice the smallest contiguous memory, so that some
// draws fit only non-contiguous allocations and some fit nothing.
func randomProblem(tb testing.TB, rng *rand.Rand) *pipeline.Problem {
	c := pipechains.Random(rng, 2+rng.IntN(8))
	opts := pipeplan.Options{GPUs: 2 + rng.IntN(4), Bandwidth: 20 + 200*rng.Float64(), WeightCopies: 2 + rng.IntN(2)}
	if rng.IntN(2) == 0 {
		opts.ActivationModel = pipeplan.ActivationsInput
	}
	pr := mustProblem(tb, c, opts)
	lo := pipeline.MemoryLowerBound(pr)
	hi, err := contiguous.MinMemory(pr)
	if err != nil {
		tb.Fatal(err)
	}
	return pr.WithMemory(lo + rng.Int64N(2*hi-lo+1))
}

// TestRandom: on random chains every plan passes the validator, MadPipe is never worse
// than the best contiguous plan, it says which plan it returns, and it refuses only when
// the contiguous planner does too, naming a memory at which it plans.
func TestRandom(t *testing.T) {
	n := 400
	if testing.Short() {
		n = 200
	}
	rng := rand.New(rand.NewPCG(12, 12))
	won := 0
	for i := range n {
		pr := randomProblem(t, rng)
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			c, cerr := contiguous.Solve(pr)
			p, err := Solve(pr, Options{TimeLimit: testLimit})
			if err != nil {
				var ie *pipeplan.InfeasibleError
				if !errors.As(err, &ie) || cerr == nil {
					t.Fatalf("Solve: %v; contiguous: %v", err, cerr)
				}
				// The refusal names the memory to raise to: MadPipe plans there.
				need, _ := contiguous.MinMemory(pr)
				if ie.LowerBound || ie.MinMemoryBytes <= pr.Options().MemoryBytes || ie.MinMemoryBytes > need {
					t.Fatalf("refusal %v, want a smallest memory in (%d, %d]", ie, pr.Options().MemoryBytes, need)
				}
				if _, err := Solve(pr.WithMemory(ie.MinMemoryBytes), Options{TimeLimit: testLimit}); err != nil {
					t.Fatalf("refused naming %d, and at %d: %v", ie.MinMemoryBytes, ie.MinMemoryBytes, err)
				}
				return
			}
			if err := pipeline.Check(pr, p); err != nil {
				t.Fatal(err)
			}
			if p.Algo != Algo {
				t.Fatalf("algo %q", p.Algo)
			}
			switch {
			case cerr == nil && p.Period > c.Period*(1+1e-9):
				t.Fatalf("period %.12g above the contiguous %.12g", p.Period, c.Period)
			case p.Chosen == ChosenContiguous && (cerr != nil || !near(p.Period, c.Period)):
				t.Fatalf("chosen contiguous, period %g, contiguous %v %v", p.Period, c, cerr)
			case p.Chosen == ChosenMadPipe:
				won++
				if p.Contiguous {
					t.Fatalf("phase 2 returned a contiguous allocation %v", p.Stages)
				}
			case p.Chosen != ChosenContiguous:
				t.Fatalf("chosen %q", p.Chosen)
			}
		})
	}
	t.Logf("madpipe's own schedule won %d of %d", won, n)
	if won == 0 {
		t.Fatal("phase 2 never beat the contiguous plan: the comparison cannot fail")
	}
}

// TestAmpleMemory: with memory that binds nothing, MadPipe reaches the contiguous optimum
// without memory limit, or does better.
func TestAmpleMemory(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 13))
	for i := range 150 {
		pr := randomProblem(t, rng).WithMemory(ample)
		c, err := contiguous.Solve(pr)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Solve(pr, Options{TimeLimit: testLimit})
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if p.Period > c.Period*(1+1e-9) {
			t.Fatalf("case %d: period %.12g above the unconstrained contiguous optimum %.12g", i, p.Period, c.Period)
		}
	}
}

// TestILPMatches1F1BStar: on a contiguous allocation, 1F1B* at its best period is optimal
// among 1-periodic patterns (Theorem 15), so the scheduling ILP run to optimality must
// reach exactly that period: lower would mean its memory or its constraints are wrong,
// higher that it misses schedules.
func TestILPMatches1F1BStar(t *testing.T) {
	solver, err := milp.FindHighs()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(12, 14))
	checked := 0
	for i := 0; checked < 120; i++ {
		pr := randomProblem(t, rng)
		if i%3 == 2 { // allocations whose stages recompute
			pr = checkpointProblem(t, rng)
		}
		c, err := contiguous.Solve(pr)
		if errors.Is(err, chainplan.ErrInfeasible) {
			continue
		} else if err != nil {
			t.Fatal(err)
		}
		checked++
		tr := &Trace{}
		p := schedule(pr, c.Stages, math.Inf(1), solver, proofLimit, tr)
		if p == nil || len(tr.Attempts) != 1 || tr.Attempts[0].Status != "optimal" {
			t.Fatalf("case %d: no optimal schedule for the contiguous allocation %v (%+v)", i, c.Stages, tr)
		}
		if !near(p.Period, c.Period) && math.Abs(p.Period-c.Period) > 1e-6*c.Period {
			t.Fatalf("case %d: ILP period %.12g, 1F1B* best period %.12g (stages %v)", i, p.Period, c.Period, c.Stages)
		}
	}
}

// checkpointProblem draws a problem as randomProblem does, with checkpointing inside
// stages and the memory between a third of the smallest contiguous memory without
// recomputation and that memory, where recomputing is what lets plans fit.
func checkpointProblem(tb testing.TB, rng *rand.Rand) *pipeline.Problem {
	c := pipechains.Random(rng, 2+rng.IntN(7))
	opts := pipeplan.Options{GPUs: 2 + rng.IntN(3), Bandwidth: 20 + 200*rng.Float64()}
	need, err := contiguous.MinMemory(mustProblem(tb, c, opts))
	if err != nil {
		tb.Fatal(err)
	}
	opts.Checkpoint = true
	return mustProblem(tb, c, opts).WithMemory(need/3 + rng.Int64N(2*need/3+1))
}

// TestRandomCheckpoint: with checkpointing inside stages, every plan passes the validator
// (the recomputing stages' sequences replayed within their budgets), MadPipe is never
// worse than the best contiguous plan with checkpointing, refuses only when that does
// too, and its plans recompute where memory is short.
func TestRandomCheckpoint(t *testing.T) {
	n := 120
	if testing.Short() {
		n = 50
	}
	rng := rand.New(rand.NewPCG(12, 16))
	recomputing, own := 0, 0
	for i := range n {
		pr := checkpointProblem(t, rng)
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			c, cerr := contiguous.Solve(pr)
			p, err := Solve(pr, Options{TimeLimit: testLimit})
			if err != nil {
				if cerr == nil || !errors.Is(err, chainplan.ErrInfeasible) {
					t.Fatalf("Solve: %v; contiguous: %v", err, cerr)
				}
				return
			}
			if err := pipeline.Check(pr, p); err != nil {
				t.Fatal(err)
			}
			if cerr == nil && p.Period > c.Period*(1+1e-9) {
				t.Fatalf("period %.12g above the contiguous %.12g", p.Period, c.Period)
			}
			for _, s := range p.Stages {
				if s.Recompute != nil {
					recomputing++
					if p.Chosen == ChosenMadPipe {
						own++
					}
					break
				}
			}
		})
	}
	t.Logf("%d plans recompute, %d of them MadPipe's own schedules", recomputing, own)
	if recomputing == 0 {
		t.Fatal("no plan recomputes: the memory never binds")
	}
}

// TestMinMemoryIsSmallest: MinMemory bisects on "Solve plans", which is not monotone in
// the memory by construction (phase 1's allocations change with it); on random chains
// whose MadPipe plans fit below the smallest contiguous memory, Solve's own test (plan)
// refuses every memory below MinMemory, scanned byte by byte (in -short mode, the 16
// bytes below it), and plans at it. Chains where nothing fits below the contiguous
// minimum are drawn too, until enough of the other kind are found.
func TestMinMemoryIsSmallest(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 17))
	want, window := 5, int64(1)<<40
	if testing.Short() {
		want, window = 2, 16
	}
	opts := Options{TimeLimit: testLimit, RequireSolver: true} // without it nothing plans below contiguous
	below := 0
	for i := 0; below < want; i++ {
		if i == 400 {
			t.Fatalf("%d of 400 chains plan below the contiguous minimum", below)
		}
		c := pipechains.Random(rng, 3+rng.IntN(5))
		o := pipeplan.Options{GPUs: 2 + rng.IntN(2), Bandwidth: 20 + 200*rng.Float64(), NoTemporaries: rng.IntN(2) == 0, Checkpoint: rng.IntN(3) == 0}
		pr := mustProblem(t, c, o)
		hi, _ := contiguous.MinMemory(pr)
		m, err := MinMemory(pr, opts)
		if err != nil {
			t.Fatal(err)
		}
		if m >= hi && i%4 != 0 {
			continue // nothing below the contiguous minimum: scan one chain in four of these
		}
		if m < hi {
			below++
		}
		if p, err := plan(pr.WithMemory(m), opts, &Trace{}); err != nil || p == nil {
			t.Fatalf("chain %d: MinMemory %d, and no plan there (%v)", i, m, err)
		}
		lo := max(pr.MemoryFor(pipeline.MemoryLowerBound(pr)), m-window)
		for b := lo; b < m; b++ {
			if p, err := plan(pr.WithMemory(b), opts, &Trace{}); err != nil || p != nil {
				t.Fatalf("chain %d (%+v): MinMemory %d, and a plan at %d (%v)", i, o, m, b, err)
			}
		}
	}
}
