package pybind

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner"
)

// frontierRequest is the JSON form of a frontier request from Python.
type frontierRequest struct {
	Algo  string `json:"algo"`
	Slots int64  `json:"slots"`
}

// Frontier computes the whole budget-versus-makespan trade-off of the chain chainJSON (a
// chainplan.chain/v1 document) as requestJSON asks ({"algo": "rotor", "slots": 0}; algo
// an algorithm of the planner registry with a frontier, rotor or revolve, empty meaning
// "rotor"; slots 0 meaning the default, 500) and returns it as JSON: rotor.Frontier, whose
// points run from the smallest feasible budget to the store-all peak, all on the unit of
// the store-all peak (rotor.SolveFrontier).
func Frontier(chainJSON, requestJSON string) (frontier string, err error) {
	defer recoverError(&err)
	c, err := chainplan.ParseChain([]byte(chainJSON))
	if err != nil {
		return "", codedError(err)
	}
	e, req, err := parseFrontierRequest(requestJSON)
	if err != nil {
		return "", codedError(err)
	}
	f, err := e.Schedule.Frontier(c, req)
	if err != nil {
		return "", codedError(err)
	}
	b, err := json.Marshal(f)
	return string(b), codedError(err)
}

// parseFrontierRequest reads a frontier request. Unknown fields are refused: a budget or
// a bandwidth sent here would otherwise be silently ignored.
func parseFrontierRequest(s string) (planner.Entry, planner.Request, error) {
	var r frontierRequest
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return planner.Entry{}, planner.Request{}, fmt.Errorf("%w: frontier request: %v", errBadRequest, err)
	}
	algo := r.Algo
	if algo == "" {
		algo = "rotor"
	}
	hasFrontier := func(e planner.Entry) bool { return e.Schedule != nil && e.Schedule.Frontier != nil }
	if e, _ := planner.Lookup(algo); !hasFrontier(e) {
		var names []string
		for _, e := range planner.Entries() {
			if hasFrontier(e) {
				names = append(names, e.Name)
			}
		}
		list := strings.Join(names, ", ")
		if i := strings.LastIndex(list, ", "); i >= 0 {
			list = list[:i] + " and " + list[i+2:]
		}
		return planner.Entry{}, planner.Request{}, fmt.Errorf("%w: no frontier for algorithm %q: only %s have one",
			errBadRequest, r.Algo, list)
	}
	// rotor reads negative slots as "exact bytes", which would build a table as large as
	// the peak in bytes; Python never asks for it, so refuse it rather than run out of memory.
	if r.Slots < 0 {
		return planner.Entry{}, planner.Request{}, fmt.Errorf("%w: slots must be positive, or 0 for the default (got %d)",
			errBadRequest, r.Slots)
	}
	e, _ := planner.Lookup(algo)
	return e, planner.Request{Algo: algo, Slots: r.Slots}, nil
}
