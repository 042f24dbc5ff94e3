package planner

import (
	"fmt"
	"strings"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/rotor"
)

// HasFrontier reports whether entry e computes a frontier, of one chain or of towers
// joined at the loss (Frontier, FrontierMultichain).
func HasFrontier(e Entry) bool {
	return (e.Schedule != nil && e.Schedule.Frontier != nil) || (e.Multichain != nil && e.Multichain.Frontier != nil)
}

// Frontier is the façade of the frontiers, as Solve is of the plans: the whole
// budget-versus-makespan trade-off of chain c from one run of req.Algo's DP ("" means
// rotor), on req.Slots slots of the store-all peak (0: the algorithm's default, 500). The
// CLI's frontier command and the bindings both call it. Errors: ErrUnsupported for an
// algorithm without a frontier of one chain or negative slots (rotor would read them as
// exact bytes and build a table as large as the peak in bytes); the DP's errors.
func Frontier(c *chainplan.Chain, req Request) (*rotor.Frontier, error) {
	e, err := frontierEntry(req, func(e Entry) bool { return e.Schedule != nil && e.Schedule.Frontier != nil })
	if err != nil {
		return nil, err
	}
	req.Algo = e.Name
	return e.Schedule.Frontier(c, req)
}

// FrontierMultichain is Frontier for towers joined at the loss (a multichain algorithm).
func FrontierMultichain(mc *chainplan.MultiChain, req Request) (*rotor.Frontier, error) {
	e, err := frontierEntry(req, func(e Entry) bool { return e.Multichain != nil && e.Multichain.Frontier != nil })
	if err != nil {
		return nil, err
	}
	req.Algo = e.Name
	return e.Multichain.Frontier(mc, req)
}

// frontierEntry checks a frontier request against the entries that have the frontier
// asked for (has) and returns the algorithm's entry.
func frontierEntry(req Request, has func(Entry) bool) (Entry, error) {
	e, ok := Lookup(req.algo())
	if !ok || !has(e) {
		list := names(has)
		joined := strings.Join(list, ", ")
		if len(list) > 1 {
			joined = strings.Join(list[:len(list)-1], ", ") + " and " + list[len(list)-1]
		}
		return Entry{}, fmt.Errorf("%w: no frontier for algorithm %q: only %s have one", chainplan.ErrUnsupported, req.Algo, joined)
	}
	if req.Slots < 0 {
		return Entry{}, fmt.Errorf("%w: slots must be positive, or 0 for the default (got %d)", chainplan.ErrUnsupported, req.Slots)
	}
	return e, nil
}
