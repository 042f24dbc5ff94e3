package planner_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner"
)

// towers is two small towers joined by a loss.
func towers() *chainplan.MultiChain {
	tower := func(n int, a int64) chainplan.Chain {
		c := chainplan.Chain{Format: chainplan.ChainFormat, InputBytes: a}
		for range n {
			c.Stages = append(c.Stages, chainplan.Stage{FwdTime: 1, BwdTime: 2, OutBytes: a, SavedBytes: 2 * a})
		}
		return c
	}
	return &chainplan.MultiChain{Format: chainplan.MultiChainFormat, Branches: []chainplan.Chain{tower(4, 8), tower(3, 4)},
		Loss: chainplan.Loss{FwdTime: 1, BwdTime: 1, BwdTmpBytes: 4}}
}

// TestSolveMultichainThroughTheRegistry plans a bundle with every multichain entry at its
// smallest budget and above: the plan replays with the entry's Simulate within the budget,
// and one byte less is refused with the smallest budget in the error.
func TestSolveMultichainThroughTheRegistry(t *testing.T) {
	mc := towers()
	algos := planner.MultichainAlgos()
	if len(algos) != 2 || algos[0] != "multichain" || algos[1] != "multichain-linear" {
		t.Fatalf("MultichainAlgos() = %v", algos)
	}
	for _, a := range algos {
		req := planner.Request{Algo: a}
		lo, err := planner.MinBudgetMultichain(mc, req)
		if err != nil {
			t.Fatal(err)
		}
		p, err := planner.SolveMultichainMin(mc, req)
		if err != nil || p.BudgetBytes != lo || p.Algo != a {
			t.Fatalf("%s at its smallest budget %d: %v, %v", a, lo, p, err)
		}
		for _, b := range []int64{lo, lo + 17, 4 * lo} {
			req.BudgetBytes = b
			p, err := planner.SolveMultichain(mc, req)
			if err != nil {
				t.Fatalf("%s at %d: %v", a, b, err)
			}
			rep, err := planner.SimulateMultichain(mc, p, b)
			if err != nil || rep.Makespan != p.Makespan || rep.PeakBytes != p.PeakBytes {
				t.Fatalf("%s at %d: replay %+v, %v; plan %v and %d", a, b, rep, err, p.Makespan, p.PeakBytes)
			}
		}
		req.BudgetBytes = lo - 1
		var ie *chainplan.InfeasibleError
		if _, err := planner.SolveMultichain(mc, req); !errors.As(err, &ie) || ie.MinBudgetBytes != lo {
			t.Fatalf("%s one byte below: %v", a, err)
		}
	}
}

func TestMultichainRequests(t *testing.T) {
	mc := towers()
	tests := []struct {
		req  planner.Request
		want string
	}{
		{planner.Request{Algo: "rotor", BudgetBytes: 100}, `"rotor" plans one chain`},
		{planner.Request{Algo: "", BudgetBytes: 100}, `unknown algorithm ""`},
		{planner.Request{Algo: "Multichain", BudgetBytes: 100}, `did you mean "multichain"`},
		{planner.Request{Algo: "multichain", BudgetBytes: 100, Segments: 2}, "segments apply"},
		{planner.Request{Algo: "multichain", BudgetBytes: 100, Bandwidth: 1e9}, "a bandwidth applies"},
		{planner.Request{Algo: "multichain", BudgetBytes: 0}, "budget must be positive"},
		{planner.Request{Algo: "multichain", BudgetBytes: 100, Slots: -1}, "slots must be positive"},
	}
	for _, tt := range tests {
		if _, err := planner.SolveMultichain(mc, tt.req); !errors.Is(err, chainplan.ErrUnsupported) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v, want %q", tt.req, err, tt.want)
		}
	}
	// A single-chain entry point refuses the multichain algorithms with a pointer to the bundle.
	c := &mc.Branches[0]
	if _, err := planner.Solve(c, planner.Request{Algo: "multichain", BudgetBytes: 100}); !errors.Is(err, chainplan.ErrUnsupported) ||
		!strings.Contains(err.Error(), "bundle") {
		t.Fatalf("planner.Solve with multichain: %v", err)
	}
	// A plan for two towers does not replay on one.
	p, err := planner.SolveMultichain(mc, planner.Request{Algo: "multichain", BudgetBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	one := &chainplan.MultiChain{Format: chainplan.MultiChainFormat, Branches: mc.Branches[:1]}
	if _, err := planner.SimulateMultichain(one, p, -1); !errors.Is(err, chainplan.ErrInvalidPlan) {
		t.Fatalf("replay on the wrong bundle: %v", err)
	}
}
