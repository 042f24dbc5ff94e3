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
// the store-all peak (planner.Frontier, the façade the CLI calls too).
func Frontier(chainJSON, requestJSON string) (frontier string, err error) {
	defer recoverError(&err)
	c, err := chainplan.ParseChain([]byte(chainJSON))
	if err != nil {
		return "", codedError(err)
	}
	// Unknown fields are refused: a budget or a bandwidth sent here would otherwise be
	// silently ignored.
	var r frontierRequest
	dec := json.NewDecoder(strings.NewReader(requestJSON))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return "", codedError(fmt.Errorf("%w: frontier request: %v", errBadRequest, err))
	}
	f, err := planner.Frontier(c, planner.Request{Algo: r.Algo, Slots: r.Slots})
	if err != nil {
		return "", codedError(err)
	}
	b, err := json.Marshal(f)
	return string(b), codedError(err)
}
