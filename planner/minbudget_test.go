package planner_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner"
	"github.com/chainplan/chainplan/planner/internal/dpcount"
	"github.com/chainplan/chainplan/planner/internal/testchains"
)

// oldMinBudget is how MinBudget used to find the smallest budget, kept here as the oracle
// of the direct searches: solve at 1 byte and read the answer out of the
// *chainplan.InfeasibleError.
func oldMinBudget(c *chainplan.Chain, req planner.Request) (int64, error) {
	req.BudgetBytes = 1
	p, err := planner.Solve(c, req)
	if err == nil {
		return p.PeakBytes, nil
	}
	if ie, ok := err.(*chainplan.InfeasibleError); ok && ie.MinBudgetBytes > 0 {
		return ie.MinBudgetBytes, nil
	}
	return 0, err
}

// approximate lists the algorithms whose smallest budget is searched to a precision
// rather than to the byte (offload to M_peak/(8·slots), the heuristics to 1 % of M_peak,
// pofo to both, its DP's and the heuristics'): Solve may succeed a little below their
// MinBudget (smallest_test.go bounds how far).
var approximate = []string{"pofo", "offload", "autocapper", "opportunist"}

// TestMinBudgetDirect checks every algorithm of the registry on random chains (every other
// one with the exact memory model of chainplan.chain/v2 and options): the direct
// MinBudget equals the old answer, Solve succeeds at it with a plan its family's simulator
// replays within it, SolveMin returns that same plan, and one byte less is refused (with
// the same smallest budget in the error) unless the search is approximate.
func TestMinBudgetDirect(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 1))
	for _, e := range planner.Entries() {
		if e.Schedule == nil {
			continue
		}
		t.Run(e.Name, func(t *testing.T) {
			n := 150
			switch {
			case e.Name == "pofo":
				n = 10 // each Solve runs the DP twice, AUTOCAPPER and OPPORTUNIST
			case e.Family == planner.Offloading:
				n = 25
			}
			if testing.Short() {
				n /= 5
			}
			for i := range n {
				c := testchains.Random(rng, 1+rng.IntN(6), testchains.RandomOptions{MaxSize: 30, Exact: i%2 == 1, Options: 2})
				req := planner.Request{Algo: e.Name}
				if e.Reads(planner.FieldSlots) && rng.IntN(2) == 0 {
					req.Slots = 4 + rng.Int64N(20) // a coarse grid, where rounding matters
				}
				if e.Reads(planner.FieldSegments) && rng.IntN(2) == 0 {
					req.Segments = 1 + rng.IntN(c.Len())
				}
				if e.Reads(planner.FieldBandwidth) {
					req.Bandwidth = []float64{0.5, 2, 20}[rng.IntN(3)]
				}
				checkMinBudget(t, fmt.Sprintf("chain %d %+v", i, req), c, req, e)
			}
		})
	}
}

func checkMinBudget(t *testing.T, what string, c *chainplan.Chain, req planner.Request, e planner.Entry) {
	t.Helper()
	want, oldErr := oldMinBudget(c, req)
	got, err := planner.MinBudget(c, req)
	if oldErr != nil || err != nil {
		// The old way lost the reason (an InfeasibleError without a budget); both must fail.
		if oldErr == nil || err == nil {
			t.Fatalf("%s: MinBudget = %d, %v; the old way %d, %v", what, got, err, want, oldErr)
		}
		return
	}
	if got != max(1, want) {
		t.Fatalf("%s: MinBudget = %d, the old way %d", what, got, want)
	}
	req.BudgetBytes = got
	p, err := planner.Solve(c, req)
	if err != nil {
		t.Fatalf("%s: Solve at MinBudget %d: %v", what, got, err)
	}
	rep, err := e.Schedule.Simulate(c, p, got)
	if err != nil || rep.PeakBytes != p.PeakBytes {
		t.Fatalf("%s: the plan at MinBudget %d does not replay: %v (peak %d, plan %d)", what, got, err, rep.PeakBytes, p.PeakBytes)
	}
	m, err := planner.SolveMin(c, req)
	if err != nil {
		t.Fatalf("%s: SolveMin: %v", what, err)
	}
	if m.BudgetBytes != got || m.Makespan != p.Makespan || m.PeakBytes != p.PeakBytes || m.Slots != p.Slots ||
		chainplan.FormatSequence(m.Sequence) != chainplan.FormatSequence(p.Sequence) || (m.Offload == nil) != (p.Offload == nil) {
		t.Fatalf("%s: SolveMin differs from Solve at %d:\n got %+v\nwant %+v", what, got, m, p)
	}
	if got == 1 {
		return
	}
	req.BudgetBytes = got - 1
	_, err = planner.Solve(c, req)
	var ie *chainplan.InfeasibleError
	switch {
	case err == nil && slices.Contains(approximate, e.Name):
	case !errors.As(err, &ie):
		t.Fatalf("%s: Solve one byte below MinBudget %d: %v, want infeasible", what, got, err)
	case ie.MinBudgetBytes != got:
		t.Fatalf("%s: Solve one byte below MinBudget %d says the smallest budget is %d", what, got, ie.MinBudgetBytes)
	}
}

// TestMinBudgetEdgeCases checks chains without memory (every budget fits: the answer is
// the smallest budget, 1 byte) and the request errors MinBudget and SolveMin share with
// Solve.
func TestMinBudgetEdgeCases(t *testing.T) {
	empty := &chainplan.Chain{Format: chainplan.ChainFormat, Stages: []chainplan.Stage{{FwdTime: 1, BwdTime: 1}}}
	for _, e := range planner.Entries() {
		if e.Schedule == nil {
			continue // pipelines: planner/pipeline's tests
		}
		req := planner.Request{Algo: e.Name}
		if e.Reads(planner.FieldBandwidth) {
			req.Bandwidth = 1
		}
		if b, err := planner.MinBudget(empty, req); err != nil || b != 1 {
			t.Errorf("%s: MinBudget of a chain without memory = %d, %v; want 1", e.Name, b, err)
		}
		if p, err := planner.SolveMin(empty, req); err != nil || p.BudgetBytes != 1 || p.PeakBytes != 0 {
			t.Errorf("%s: SolveMin of a chain without memory = %+v, %v", e.Name, p, err)
		}
	}
	bad := &chainplan.Chain{Format: chainplan.ChainFormat}
	if _, err := planner.SolveMin(bad, planner.Request{}); !errors.Is(err, chainplan.ErrInvalidChain) {
		t.Errorf("SolveMin of a chain without stages: %v", err)
	}
	if _, err := planner.SolveMin(testchains.ExampleA().Chain, planner.Request{Algo: "rotor", Bandwidth: 1}); !errors.Is(err, chainplan.ErrUnsupported) {
		t.Errorf("SolveMin with a bandwidth for rotor: %v", err)
	}
}

// TestSolveMinRunsOneTable counts the dynamic programs of one plan at the smallest budget
// (issue 10: solving at 1 byte to read the minimum from the error, then solving again,
// entered the rotor DP seven times): SolveMin builds the persistent table at most once,
// or the floating one once (the floating search probes with floatingNeed, no table), and
// runs fewer feasibility DPs than the old MinBudget, then Solve.
func TestSolveMinRunsOneTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 2))
	for i := range 60 {
		c := testchains.Random(rng, 2+rng.IntN(5), testchains.RandomOptions{MaxSize: 1 << 20})
		for _, algo := range []string{"rotor", "revolve", "optimal"} {
			req := planner.Request{Algo: algo, Slots: 8 + rng.Int64N(40)}
			start := dpcount.Now()
			b, err := oldMinBudget(c, req)
			if err != nil {
				t.Fatalf("chain %d %s: %v", i, algo, err)
			}
			req.BudgetBytes = b
			if _, err := planner.Solve(c, req); err != nil {
				t.Fatalf("chain %d %s: Solve at %d: %v", i, algo, b, err)
			}
			old := start.Since()
			start = dpcount.Now()
			if _, err := planner.SolveMin(c, req); err != nil {
				t.Fatalf("chain %d %s: SolveMin: %v", i, algo, err)
			}
			now := start.Since()
			// One table, of the algorithm's kind (none for a store-all answer), and fewer
			// feasibility DPs than the old way's. The floating search costs the same both
			// ways since both now probe with floatingNeed, not with whole tables.
			bad := now.Table+now.Floating > 1 || now.Table > old.Table || now.Floating > old.Floating
			if algo == "optimal" {
				bad = bad || now.Need > old.Need
			} else {
				bad = bad || now.Need >= old.Need
			}
			if bad {
				t.Fatalf("chain %d %s: SolveMin ran %+v, the old way %+v", i, algo, now, old)
			}
		}
	}
}
