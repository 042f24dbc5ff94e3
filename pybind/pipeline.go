package pybind

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/service"
	"github.com/chainplan/chainplan/pipeplan"
)

// parsePipelineRequest decodes Python's request straight into the family's one request
// type (pipeplan.Request's JSON form: every field left out means its default, which that
// type holds, so Python sends only what the user gave, sizes as the user wrote them).
func parsePipelineRequest(s string) (pipeplan.Request, error) {
	var r pipeplan.Request
	var oe *pipeplan.OptionError
	switch err := json.Unmarshal([]byte(s), &r); {
	case errors.As(err, &oe): // a field's value: the message names the field
		return r, fmt.Errorf("%w: %s %s", errBadRequest, oe.Field, oe.Msg)
	case err != nil: // the JSON itself, or a field Python never sends
		return r, fmt.Errorf("%w: request: %w", errBadRequest, err)
	}
	r.Source = service.SourcePython
	return r, nil
}

// layerParamBytes returns each layer's weights in bytes: what the pipeline runner checks
// the model's layers against, sent with the plan so that Python needs no second crossing.
func layerParamBytes(c *chainplan.Chain) []int64 {
	out := make([]int64, len(c.Stages))
	for i, st := range c.Stages {
		out[i] = st.ParamBytes
	}
	return out
}

// Pipeline plans the chain of the source of callJSON ({"source": {...}, "request": {...}})
// over several devices (chainplan.pipeline_plan's one crossing). The request is
// pipeplan.Request's JSON form: {"algo": "madpipe", "gpus": 4, "memory_bytes": N or
// "16GiB", "min_memory": false, "faster_memory": false, "bandwidth": B or "12GB/s",
// "weight_copies": 2, "activation_model": "saved", "headroom": 0, "no_temporaries":
// false, "checkpoint": false, "time_limit_s": 0, "microbatches": 0, "require_solver":
// false, "replan": false}; every field but gpus and bandwidth may be left out for its
// default. A stored run's plan is recorded like every plan (plans.plan_json holds the
// document; docs/sql.md), or with "replan": false (the default) the plan stored for the
// same request on the run is given back, "reused" true (service.PlanPipelineInput). It
// returns {"plan": {...}, "notes": [...], "plan_id": N, "run_id": N, "reused": false,
// "layer_param_bytes": [...]}: the chainplan.pipeline/v1 plan, the planner's notes for the
// user, the ids of a stored run's plan, and each layer's weights in bytes when the chain
// is the measured model's (a run or a profile, for the runner's check of the model; not a
// chain file's).
func Pipeline(callJSON string) (result string, err error) {
	defer recoverError(&err)
	var c call
	if err := readCall(callJSON, "pipeline", &c); err != nil {
		return "", codedError(err)
	}
	req, err := parsePipelineRequest(c.request())
	if err != nil {
		return "", codedError(err)
	}
	err = withSource(c.Source, func(ctx context.Context, in *service.Input) error {
		got, weights, err := service.PlanPipelineInput(ctx, in, req)
		if err != nil {
			return err // the notes of a failed plan are in the error's message
		}
		out := map[string]any{"plan": got.Plan, "notes": nonNil(got.Notes), "reused": got.Reused}
		if got.PlanID != 0 {
			out["plan_id"], out["run_id"] = got.PlanID, got.RunID
		}
		if weights {
			out["layer_param_bytes"] = layerParamBytes(got.Chain)
		}
		b, err := json.Marshal(out)
		result = string(b)
		return err
	})
	return result, err
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
