package pybind

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/chainplan/chainplan/internal/service"
	"github.com/chainplan/chainplan/planner"
)

// frontierRequest is the JSON form of a frontier request from Python.
type frontierRequest struct {
	Algo  string `json:"algo"`
	Slots int64  `json:"slots"`
}

// Frontier computes the whole budget-versus-makespan trade-off of the chain of the source
// of callJSON ({"source": {...}, "request": {"algo": "rotor", "slots": 0}}; algo an
// algorithm of the planner registry with a frontier, rotor or revolve, empty meaning
// "rotor"; slots 0 meaning the default, 500) and returns it as JSON: rotor.Frontier, whose
// points run from the smallest feasible budget to the store-all peak, all on the unit of
// the store-all peak (planner.Frontier, the façade the CLI calls too).
func Frontier(callJSON string) (frontier string, err error) {
	defer recoverError(&err)
	var c call
	if err := readCall(callJSON, "frontier", &c); err != nil {
		return "", codedError(err)
	}
	// Unknown fields are refused: a budget or a bandwidth sent here would otherwise be
	// silently ignored.
	var r frontierRequest
	if err := strictUnmarshal(c.request(), &r); err != nil {
		return "", codedError(fmt.Errorf("%w: frontier request: %v", errBadRequest, err))
	}
	err = withSource(c.Source, func(ctx context.Context, in *service.Input) error {
		ch, err := in.ChainOf(ctx)
		if err != nil {
			return err
		}
		f, err := planner.Frontier(ch, planner.Request{Algo: r.Algo, Slots: r.Slots})
		if err != nil {
			return err
		}
		b, err := json.Marshal(f)
		frontier = string(b)
		return err
	})
	return frontier, err
}
