package pybind

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/service"
	"github.com/chainplan/chainplan/planner/simulate"
)

// traceRequest is PlanTrace's request: the plan to replay.
type traceRequest struct {
	Plan json.RawMessage `json:"plan"`
}

// PlanTrace replays the request's plan on the chain of the source of callJSON
// ({"source": {...}, "request": {"plan": <chainplan.schedule/v1 document>}}) in exact bytes
// and returns its memory over time as JSON: {"peak": bytes, "steps": [simulate.Step...]},
// each step an operation with the bytes it finds (before), needs while it runs (during) and
// leaves (after). chainplan.sharded adds to each step what a data-parallel rank holds then
// (a rank's peak is a maximum over time, not the plan's peak plus the largest of the rest).
// An offloading plan is refused: its transfers are not in these steps.
func PlanTrace(callJSON string) (out string, err error) {
	defer recoverError(&err)
	var c call
	if err := readCall(callJSON, "plan_trace", &c); err != nil {
		return "", codedError(err)
	}
	var r traceRequest
	if err := strictUnmarshal(c.request(), &r); err != nil {
		return "", codedError(fmt.Errorf("%w: trace request: %v", errBadRequest, err))
	}
	p, err := chainplan.ParsePlan(r.Plan)
	if err != nil {
		return "", codedError(err)
	}
	if p.Offload != nil {
		return "", codedError(fmt.Errorf("%w: trace request: an offloading plan's memory over time is not a replay of its sequence", errBadRequest))
	}
	var steps []simulate.Step
	var rep *simulate.Report
	if err := withSource(c.Source, func(ctx context.Context, in *service.Input) error {
		ch, err := in.ChainOf(ctx)
		if err != nil {
			return err
		}
		steps, rep = simulate.Trace(ch, p.Sequence)
		return rep.Err()
	}); err != nil {
		return "", err
	}
	b, err := json.Marshal(struct {
		Peak  int64           `json:"peak"`
		Steps []simulate.Step `json:"steps"`
	}{rep.Peak, steps})
	if err != nil {
		return "", codedError(err)
	}
	return string(b), nil
}
