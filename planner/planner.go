package planner

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/baseline"
	"github.com/chainplan/chainplan/planner/pofo"
	"github.com/chainplan/chainplan/planner/rotor"
)

// Algorithms lists the algorithm names Solve accepts.
var Algorithms = []string{"rotor", "optimal", "revolve", "sequential", "store-all",
	"pofo", "offload", "greedy", "autocapper", "opportunist"}

// OffloadAlgorithms lists the algorithms that also move activations to host memory; they
// need Request.Bandwidth (docs/pofo.md).
var OffloadAlgorithms = []string{"pofo", "offload", "greedy", "autocapper", "opportunist"}

// Request says what to plan.
type Request struct {
	// Algo is one of Algorithms; empty means "rotor".
	Algo string
	// BudgetBytes is the total activation memory, chain input included.
	BudgetBytes int64
	// Slots is the number of memory slots of the discretization (0: 500; DESIGN.md).
	// Baselines are not discretized and ignore it.
	Slots int64
	// Segments fixes the segment count of "sequential" (0: the best that fits).
	Segments int
	// Bandwidth is the GPU↔host link bandwidth in bytes per second (bytes per time unit
	// of the chain) of the offloading algorithms; it must be positive and finite for
	// them and zero for the others. Their Slots default (0) is the algorithm's own
	// (pofo.DefaultSlots(L), pofo.DefaultOffloadSlots).
	Bandwidth float64
}

func (r Request) algo() string {
	if r.Algo == "" {
		return "rotor"
	}
	return r.Algo
}

// check validates the request, the algorithm's name first: a misspelt name must be
// reported as such, not as a bandwidth or segments problem of the algorithm it is not.
// Names are case-sensitive, lower-case as listed in Algorithms: they are stored with every
// plan and compared in SQL (plans.algo), where one spelling per algorithm keeps queries
// simple; a name that differs only in case gets a hint instead.
func (r Request) check() error {
	if !slices.Contains(Algorithms, r.algo()) {
		hint := ""
		if lower := strings.ToLower(r.Algo); slices.Contains(Algorithms, lower) {
			hint = fmt.Sprintf("names are lower-case: did you mean %q? ", lower)
		}
		return fmt.Errorf("%w: unknown algorithm %q (%swant one of %s)", chainplan.ErrUnsupported, r.Algo,
			hint, strings.Join(Algorithms, ", "))
	}
	if r.Slots < 0 {
		return fmt.Errorf("%w: slots must be positive (got %d)", chainplan.ErrUnsupported, r.Slots)
	}
	if r.Segments != 0 && r.algo() != "sequential" {
		return fmt.Errorf("%w: segments apply to the sequential algorithm only (got algorithm %q)", chainplan.ErrUnsupported, r.algo())
	}
	offloads := slices.Contains(OffloadAlgorithms, r.algo())
	switch b := r.Bandwidth; {
	case offloads && (math.IsNaN(b) || math.IsInf(b, 0) || b <= 0):
		return fmt.Errorf("%w: algorithm %q needs a bandwidth: a positive, finite number of bytes per second (got %v)",
			chainplan.ErrUnsupported, r.algo(), b)
	case !offloads && b != 0:
		return fmt.Errorf("%w: a bandwidth applies to the offloading algorithms only (%s), not to %q",
			chainplan.ErrUnsupported, strings.Join(OffloadAlgorithms, ", "), r.algo())
	}
	return nil
}

// Solve plans c with the request's algorithm. Errors: *chainplan.InfeasibleError (with the
// smallest feasible budget), ErrInvalidChain, ErrUnsupported for a bad request.
func Solve(c *chainplan.Chain, req Request) (*chainplan.Plan, error) {
	if err := req.check(); err != nil {
		return nil, err
	}
	if req.BudgetBytes <= 0 {
		return nil, fmt.Errorf("%w: the budget must be positive (got %d bytes)", chainplan.ErrUnsupported, req.BudgetBytes)
	}
	opts := rotor.Options{Slots: req.Slots}
	switch req.algo() {
	case "rotor":
		return rotor.Solve(c, req.BudgetBytes, opts)
	case "revolve":
		opts.Revolve = true
		return rotor.Solve(c, req.BudgetBytes, opts)
	case "optimal":
		return rotor.SolveFloating(c, req.BudgetBytes, opts)
	case "sequential":
		return baseline.Sequential(c, req.BudgetBytes, req.Segments)
	case "store-all":
		return baseline.StoreAll(c, req.BudgetBytes)
	}
	po := pofo.Options{BandwidthBytesPerS: req.Bandwidth, Slots: req.Slots}
	switch req.algo() {
	case "pofo":
		return pofo.Solve(c, req.BudgetBytes, po)
	case "offload":
		return pofo.SolveOffload(c, req.BudgetBytes, po)
	case "greedy":
		return pofo.SolveGreedy(c, req.BudgetBytes, po)
	case "autocapper":
		return pofo.SolveAutoCapper(c, req.BudgetBytes, po)
	default: // "opportunist"
		return pofo.SolveOpportunist(c, req.BudgetBytes, po)
	}
}

// MinBudget returns the smallest budget at which Solve succeeds for the request's
// algorithm, slots and segments (its BudgetBytes is ignored).
func MinBudget(c *chainplan.Chain, req Request) (int64, error) {
	if err := req.check(); err != nil {
		return 0, err
	}
	if err := c.Validate(); err != nil {
		return 0, err
	}
	// A budget of 1 byte is below every non-trivial chain's need: the InfeasibleError then
	// carries the minimum, found by the algorithm's own search (rotor.MinBudget, the
	// floating bisection, or the smallest peak over a baseline's schedules).
	req.BudgetBytes = 1
	p, err := Solve(c, req)
	if err == nil {
		return p.PeakBytes, nil
	}
	if ie, ok := err.(*chainplan.InfeasibleError); ok && ie.MinBudgetBytes > 0 {
		return ie.MinBudgetBytes, nil
	}
	return 0, err
}
