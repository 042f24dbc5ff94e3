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

// PipelineSolve plans the chain chainJSON (chainplan.chain/v1) over several devices as
// requestJSON asks (pipeplan.Request's JSON form: {"algo": "madpipe", "gpus": 4,
// "memory_bytes": N or "16GiB", "min_memory": false, "faster_memory": false, "bandwidth": B
// or "12GB/s", "weight_copies": 2, "activation_model": "saved", "headroom": 0,
// "no_temporaries": false, "checkpoint": false, "time_limit_s": 0, "microbatches": 0,
// "require_solver": false}; every field but gpus and bandwidth may be left out for its
// default) and returns {"plan": {...}, "notes": [...], "layer_param_bytes": [...]}: the
// chainplan.pipeline/v1 plan, the planner's notes for the user and each layer's weights in
// bytes (for the runner's check of the model). Nothing is stored.
func PipelineSolve(chainJSON, requestJSON string) (result string, err error) {
	defer recoverError(&err)
	c, err := chainplan.ParseChain([]byte(chainJSON))
	if err != nil {
		return "", codedError(err)
	}
	req, err := parsePipelineRequest(requestJSON)
	if err != nil {
		return "", codedError(err)
	}
	p, notes, err := service.SolvePipeline(c, req)
	if err != nil {
		return "", codedError(err)
	}
	b, err := json.Marshal(map[string]any{"plan": p, "notes": nonNil(notes), "layer_param_bytes": layerParamBytes(c)})
	return string(b), codedError(err)
}

// PipelineSolveRun plans the chain of stored run runID as a pipeline (see PipelineSolve),
// records the plan like every plan (plans.plan_json holds the document; docs/sql.md) and
// returns {"plan_id": N, "plan": {...}, "notes": [...], "reused": false,
// "layer_param_bytes": [...]}: one crossing gives Python the whole planned document;
// "replan": false (the default) gives back the plan stored for the same request on the
// run, reused true. The database is found in this crossing by the CLI's rule
// (service.DBPath) from dbEnv (CHAINPLAN_DB as Python sees it now: a Go library keeps the
// environment of its start) and home.
func PipelineSolveRun(dbEnv, home string, runID int64, requestJSON string) (result string, err error) {
	defer recoverError(&err)
	req, err := parsePipelineRequest(requestJSON)
	if err != nil {
		return "", codedError(err)
	}
	dbPath, err := service.DBPath("", dbEnv, home)
	if err != nil {
		return "", codedError(err)
	}
	err = withService(dbPath, false, func(ctx context.Context, s *service.Service) error {
		got, err := s.PlanPipelineRun(ctx, service.RunID(runID), req)
		if err != nil {
			return err
		}
		b, err := json.Marshal(map[string]any{"plan_id": got.PlanID, "plan": got.Plan, "notes": nonNil(got.Notes),
			"reused": got.Reused, "layer_param_bytes": layerParamBytes(got.Chain)})
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
