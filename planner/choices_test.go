package planner_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner"
	"github.com/chainplan/chainplan/planner/contiguous"
	"github.com/chainplan/chainplan/planner/internal/pipechains"
	"github.com/chainplan/chainplan/planner/internal/testchains"
	"github.com/chainplan/chainplan/planner/pipeline"
	"github.com/chainplan/chainplan/planner/rotor"
)

// An option that only adds choices never makes a plan worse (docs/TESTING.md, oracle 8):
// at the same memory the planner with more choices plans wherever the other does, no
// slower, and its smallest memory is no larger. Each pair is compared on seeded random
// chains: pipeline planners with and without checkpointing inside stages, rotor-ops
// against rotor, pofo against rotor. Multichain against one chain is in
// planner/multichain (it needs the concatenation of the towers).

// cases returns the number of random cases of a test: full without -short, short with it,
// and short/4 (at least 2) under the race detector as well.
func cases(full, short int) int {
	switch {
	case !testing.Short():
		return full
	case raceEnabled:
		return max(2, short/4)
	}
	return short
}

// compare checks one pair at one memory: more plans wherever fewer does, no slower.
func compare(t *testing.T, what string, fewer, more float64, errFewer, errMore error) {
	t.Helper()
	switch {
	case errFewer != nil:
	case errMore != nil:
		t.Fatalf("%s: plans without the option (%.12g), refused with it: %v", what, fewer, errMore)
	case more > fewer*(1+1e-9):
		t.Fatalf("%s: %.12g with the option, %.12g without", what, more, fewer)
	}
}

// period returns a pipeline plan's period, or the error.
func period(c *chainplan.Chain, req pipeplan.Request) (float64, error) {
	p, _, err := planner.SolvePipeline(c, req)
	if err != nil {
		return 0, err
	}
	return p.Period, nil
}

// smallestMemory returns the algorithm's smallest memory per device for req.
func smallestMemory(c *chainplan.Chain, req pipeplan.Request) (int64, error) {
	req.MinMemory = true
	p, _, err := planner.SolvePipeline(c, req)
	if err != nil {
		return 0, err
	}
	return p.MemoryBytes, nil
}

// checkCheckpointPair compares algo with and without --checkpoint on c at req's memory
// and at each one's smallest memory. It reports whether both planned at req's memory and
// whether recomputation made the plan faster or smaller.
func checkCheckpointPair(t *testing.T, what string, c *chainplan.Chain, req pipeplan.Request) (both, helped bool) {
	t.Helper()
	with := req
	with.Checkpoint = true
	p0, e0 := period(c, req)
	p1, e1 := period(c, with)
	compare(t, what+" period", p0, p1, e0, e1)
	m0, f0 := smallestMemory(c, req)
	m1, f1 := smallestMemory(c, with)
	compare(t, what+" smallest memory", float64(m0), float64(m1), f0, f1)
	if f1 == nil {
		with.MemoryBytes = m1
		if _, err := period(c, with); err != nil {
			t.Fatalf("%s: refused at its own smallest memory %d: %v", what, m1, err)
		}
	}
	both = e0 == nil && e1 == nil
	return both, (both && p1 < p0*(1-1e-9)) || (e0 != nil && e1 == nil) || (f0 == nil && f1 == nil && m1 < m0)
}

// pipelineCase draws a pipeline request on a random chain with the memory between half the
// smallest contiguous memory without recomputation and twice it, where recomputing is
// what lets plans fit or keeps more mini-batches in flight.
func pipelineCase(t *testing.T, rng *rand.Rand, algo string, layers int) (*chainplan.Chain, pipeplan.Request) {
	c := pipechains.Random(rng, 2+rng.IntN(layers-1))
	opts := pipeplan.Options{GPUs: 1 + rng.IntN(4), Bandwidth: 20 + 200*rng.Float64(), NoTemporaries: rng.IntN(3) == 0}
	if rng.IntN(3) == 0 {
		opts.ActivationModel = pipeplan.ActivationsInput
	}
	if algo == "madpipe" && opts.GPUs == 1 {
		opts.GPUs = 2 // on one device MadPipe is the contiguous plan
	}
	pr, err := pipeline.NewProblem(c, opts)
	if err != nil {
		t.Fatal(err)
	}
	need, _ := contiguous.MinMemory(pr)
	opts.MemoryBytes = need/2 + rng.Int64N(3*need/2+1)
	return c, pipeplan.Request{Algo: algo, Options: opts, TimeLimit: 5 * time.Second, RequireSolver: algo == "madpipe"}
}

// TestCheckpointNeverWorse: with checkpointing inside stages a pipeline planner plans
// wherever it does without, with a period no longer, and needs no more memory. contiguous
// and pipedream on hundreds of chains; madpipe, whose every plan runs MILPs, on a few
// short ones (its regressions: choices_regression_test.go).
func TestCheckpointNeverWorse(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 1))
	for _, tc := range []struct {
		algo          string
		n, short, len int
	}{{"contiguous", 600, 150, 9}, {"pipedream", 600, 150, 9}, {"madpipe", 40, 8, 5}} {
		t.Run(tc.algo, func(t *testing.T) {
			n := cases(tc.n, tc.short)
			both, helped := 0, 0
			for i := range n {
				c, req := pipelineCase(t, rng, tc.algo, tc.len)
				b, h := checkCheckpointPair(t, fmt.Sprintf("chain %d on %d devices at %d B", i, req.GPUs, req.MemoryBytes), c, req)
				if b {
					both++
				}
				if h {
					helped++
				}
			}
			t.Logf("%d of %d planned both ways; recomputation helped %d", both, n, helped)
			if both < n/4 {
				t.Fatalf("only %d of %d chains planned both ways: the comparison is too weak", both, n)
			}
		})
	}
}

// TestRotorOpsNeverWorse: rotor-ops chooses an operation-level option per stage, option 0
// keeping everything as rotor does, so at every budget and grid it plans wherever rotor
// does, no slower, and its smallest budget is no larger.
func TestRotorOpsNeverWorse(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 2))
	n := cases(1500, 400)
	for i := range n {
		c := testchains.Random(rng, 1+rng.IntN(7), testchains.RandomOptions{MaxSize: 1 + rng.Int64N(1000), Exact: true, Options: 1 + rng.IntN(3)})
		req := planner.Request{Algo: "rotor"}
		if rng.IntN(2) == 0 {
			req.Slots = 4 + rng.Int64N(40)
		}
		ops := req
		ops.Algo = "rotor-ops"
		m0, e0 := planner.MinBudget(c, req)
		m1, e1 := planner.MinBudget(c, ops)
		what := fmt.Sprintf("chain %d at %d slots", i, req.Slots)
		compare(t, what+" smallest budget", float64(m0), float64(m1), e0, e1)
		peak := rotor.StoreAllPeak(c)
		for range 4 {
			req.BudgetBytes = 1 + rng.Int64N(peak+2)
			ops.BudgetBytes = req.BudgetBytes
			p0, e0 := planner.Solve(c, req)
			p1, e1 := planner.Solve(c, ops)
			compare(t, fmt.Sprintf("%s, budget %d", what, req.BudgetBytes), makespan(p0), makespan(p1), e0, e1)
		}
	}
}

func makespan(p *chainplan.Plan) float64 {
	if p == nil {
		return 0
	}
	return p.Makespan
}

// TestPOFONeverWorse: pofo compares its DP with rotor's plan at the same budget and grid
// (and with AUTOCAPPER and OPPORTUNIST), so with offloading allowed it plans wherever
// rotor does, no slower, and its smallest budget is rotor's or below. The grid is the
// same for both: pofo's rotor candidate uses at least 2(N+4) slots, so the test draws
// that many or more (at the default, 500, they agree too). pofo reads chains as version 1
// (Chain.Conservative: its executor recomputes whole stages), so the chains are version 1.
func TestPOFONeverWorse(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 3))
	n := cases(120, 24)
	for i := range n {
		c := testchains.Random(rng, 1+rng.IntN(5), testchains.RandomOptions{MaxSize: 1 + rng.Int64N(200)})
		req := planner.Request{Algo: "rotor", Slots: 2*int64(c.Len()+5) + rng.Int64N(8)}
		off := req
		off.Algo, off.Bandwidth = "pofo", []float64{0.5, 2, 20, 1000}[rng.IntN(4)]
		what := fmt.Sprintf("chain %d at %d slots, %g B/s", i, req.Slots, off.Bandwidth)
		m0, e0 := planner.MinBudget(c, req)
		m1, e1 := planner.MinBudget(c, off)
		compare(t, what+" smallest budget", float64(m0), float64(m1), e0, e1)
		peak := rotor.StoreAllPeak(c)
		for range 3 {
			req.BudgetBytes = 1 + rng.Int64N(peak+2)
			off.BudgetBytes = req.BudgetBytes
			p0, e0 := planner.Solve(c, req)
			p1, e1 := planner.Solve(c, off)
			if e1 != nil && !errors.Is(e1, chainplan.ErrInfeasible) {
				t.Fatalf("%s, budget %d: %v", what, req.BudgetBytes, e1)
			}
			compare(t, fmt.Sprintf("%s, budget %d", what, req.BudgetBytes), makespan(p0), makespan(p1), e0, e1)
		}
	}
}
