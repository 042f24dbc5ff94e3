package service_test

import (
	"errors"
	"math/rand"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/service"
	"github.com/chainplan/chainplan/planner"
	"github.com/chainplan/chainplan/planner/simulate"
)

// dropoutChain is the shape of issue 36's chain: eight blocks that draw random numbers
// (each with a replay state of `state` bytes; 0: the chain does not say), then a head
// that draws none and peaks above them.
func dropoutChain(state int64) *chainplan.Chain {
	c := &chainplan.Chain{Format: chainplan.ChainFormatV2, InputBytes: 2048}
	for range 8 {
		c.Stages = append(c.Stages, chainplan.Stage{Name: "block", FwdTime: 1, BwdTime: 2, OutBytes: 8192,
			SavedBytes: 16384, FwdTmpBytes: 0, BwdTmpBytes: 8192, ReplayBytes: state})
	}
	c.Stages = append(c.Stages, chainplan.Stage{Name: "head", FwdTime: 1, BwdTime: 2, OutBytes: 65536,
		SavedBytes: 73728, FwdTmpBytes: 0, BwdTmpBytes: 65536})
	return c
}

// Every plan of a chain with replay states holds its states in its peak, and fits its
// budget with them: the smallest plan, a plan at each budget between it and store-all,
// and store-all, which keeps none.
func TestSolveCountsReplayStates(t *testing.T) {
	const state = 5056
	c, plain := dropoutChain(state), dropoutChain(0)
	req := service.Request{Request: planner.Request{Algo: "rotor"}}
	min := req
	min.Min = true
	least, err := service.Solve(c, min)
	if err != nil {
		t.Fatal(err)
	}
	leastPlain, err := service.Solve(plain, min)
	if err != nil {
		t.Fatal(err)
	}
	states := c.ReplayStateBytes(least.Sequence)
	if states == 0 {
		t.Fatalf("the smallest plan recomputes no random stage: %v", least.Sequence)
	}
	if least.PeakBytes != leastPlain.PeakBytes+states || least.BudgetBytes < least.PeakBytes {
		t.Fatalf("smallest plan: peak %d, budget %d; want the plain chain's peak %d + %d of states, within the budget",
			least.PeakBytes, least.BudgetBytes, leastPlain.PeakBytes, states)
	}
	if got, err := service.MinBudget(c, req); err != nil || got != least.BudgetBytes {
		t.Fatalf("MinBudget=%d, %v; want the smallest plan's budget %d", got, err, least.BudgetBytes)
	}
	storeAll := simulate.Replay(plain, chainplan.StoreAllSequence(c.Len()), -1).Peak
	resolved := 0
	budgets := []int64{least.BudgetBytes, least.BudgetBytes - 1}
	for b := leastPlain.BudgetBytes; b <= storeAll; b += 1024 {
		budgets = append(budgets, b)
	}
	for _, budget := range budgets {
		req.BudgetBytes = budget
		p, err := service.Solve(c, req)
		var inf *chainplan.InfeasibleError
		if errors.As(err, &inf) {
			if budget >= least.BudgetBytes || inf.MinBudgetBytes != least.BudgetBytes {
				t.Fatalf("budget %d: infeasible naming %d; want a plan from the smallest plan's budget %d up, and that budget named below it",
					budget, inf.MinBudgetBytes, least.BudgetBytes)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		rep := simulate.Replay(c, p.Sequence, budget)
		if !rep.Valid || p.PeakBytes != rep.Peak || p.PeakBytes > budget || p.BudgetBytes != budget {
			t.Fatalf("budget %d: plan peak %d (budget %d), replay peak %d valid %v: the states must be in both, within the budget",
				budget, p.PeakBytes, p.BudgetBytes, rep.Peak, rep.Valid)
		}
		// The planner alone may pick a plan that fits only without its states: the
		// façade plans again below the budget.
		if alone, err := planner.Solve(c, req.Request); err == nil && alone.PeakBytes+c.ReplayStateBytes(alone.Sequence) > budget {
			resolved++
		}
	}
	if resolved == 0 {
		t.Fatal("no budget needed planning again: the test does not exercise the loop")
	}
	req.BudgetBytes = storeAll
	p, err := service.Solve(c, req)
	if err != nil {
		t.Fatal(err)
	}
	if c.ReplayStateBytes(p.Sequence) != 0 || p.PeakBytes != storeAll {
		t.Fatalf("store-all budget: peak %d, want store-all's %d with no state", p.PeakBytes, storeAll)
	}
}

// From the smallest budget up, every budget has a plan that fits with its states, as
// the simulator replays it: on random chains, half their stages drawing random numbers.
// Planning again below a budget may find only plans that keep more states than the
// smallest one; the smallest plan is then the answer (some of these budgets need it).
func TestSolveFitsEveryBudgetFromMinBudget(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for trial := range 150 {
		c := &chainplan.Chain{Format: chainplan.ChainFormatV2, InputBytes: int64(1000 + rng.Intn(5000))}
		for range 3 + rng.Intn(8) {
			out := int64(500 + rng.Intn(20000))
			var state int64
			if rng.Intn(2) == 0 {
				state = 5056
			}
			c.Stages = append(c.Stages, chainplan.Stage{Name: "s", FwdTime: 1 + rng.Float64(), BwdTime: 2,
				OutBytes: out, SavedBytes: out + int64(rng.Intn(20000)), FwdTmpBytes: int64(rng.Intn(3000)),
				BwdTmpBytes: int64(rng.Intn(5000)), ReplayBytes: state})
		}
		req := service.Request{Request: planner.Request{Algo: "rotor"}}
		least, err := service.MinBudget(c, req)
		if err != nil {
			t.Fatal(err)
		}
		for range 20 {
			req.BudgetBytes = least + int64(rng.Intn(60000))
			p, err := service.Solve(c, req)
			if err != nil {
				t.Fatalf("chain %d, budget %d (smallest %d): %v", trial, req.BudgetBytes, least, err)
			}
			rep := simulate.Replay(c, p.Sequence, req.BudgetBytes)
			if !rep.Valid || rep.Peak != p.PeakBytes || p.PeakBytes > req.BudgetBytes {
				t.Fatalf("chain %d, budget %d: plan peak %d, replay peak %d valid %v", trial, req.BudgetBytes,
					p.PeakBytes, rep.Peak, rep.Valid)
			}
		}
	}
}
