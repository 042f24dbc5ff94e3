package pybind

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/service"
	"github.com/chainplan/chainplan/planner/pipeline"
)

// pipelineRequest is the JSON form of a pipeline planning request from Python
// (chainplan.pipeline_plan).
// Every field left out means its default, which the Go request types hold
// (planner.PipelineRequest): Python sends only what the user gave.
type pipelineRequest struct {
	Algo            string  `json:"algo"`
	GPUs            int     `json:"gpus"`
	MemoryBytes     int64   `json:"memory_bytes"`
	MinMemory       bool    `json:"min_memory"`
	FasterMemory    bool    `json:"faster_memory"`
	Bandwidth       float64 `json:"bandwidth"`
	WeightCopies    int     `json:"weight_copies"`
	ActivationModel string  `json:"activation_model"`
	Headroom        float64 `json:"headroom"`
	NoTemporaries   bool    `json:"no_temporaries"`
	Checkpoint      bool    `json:"checkpoint"`
	Replan          bool    `json:"replan"`
	TimeLimitS      float64 `json:"time_limit_s"`
	RequireSolver   bool    `json:"require_solver"`
	// Microbatches is written into the plan (its optional "microbatches" field), stored
	// with it, for the executor; the planners do not read it.
	Microbatches int `json:"microbatches"`
}

func parsePipelineRequest(s string) (service.PipelineRequest, error) {
	var r pipelineRequest
	if err := strictUnmarshal(s, &r); err != nil {
		return service.PipelineRequest{}, fmt.Errorf("%w: request: %v", errBadRequest, err)
	}
	if r.Microbatches < 0 {
		return service.PipelineRequest{}, fmt.Errorf("%w: microbatches must be ≥ 1 (got %d)", errBadRequest, r.Microbatches)
	}
	return service.PipelineRequest{
		Algo: r.Algo,
		Options: pipeline.Options{GPUs: r.GPUs, MemoryBytes: r.MemoryBytes, Bandwidth: r.Bandwidth,
			WeightCopies: r.WeightCopies, ActivationModel: pipeline.ActivationModel(r.ActivationModel),
			Headroom: r.Headroom, NoTemporaries: r.NoTemporaries, Checkpoint: r.Checkpoint},
		MinMemory:     r.MinMemory,
		FasterMemory:  r.FasterMemory,
		Replan:        r.Replan,
		TimeLimit:     time.Duration(r.TimeLimitS * float64(time.Second)),
		RequireSolver: r.RequireSolver,
		Source:        service.SourcePython,
		Microbatches:  r.Microbatches,
	}, nil
}

// pipelineError codes err as codedError does, keeping the smallest memory per device of a
// pipeline planner's infeasibility as the Python InfeasibleBudget's min_budget_bytes (0
// when only a lower bound or nothing is known) and the planner's own words.
func pipelineError(err error) error {
	var ie *pipeline.InfeasibleError
	if errors.As(err, &ie) {
		smallest := ie.MinMemoryBytes
		if ie.LowerBound {
			smallest = 0
		}
		msg := strings.TrimPrefix(err.Error(), "chainplan: ")
		return fmt.Errorf("chainplan[infeasible;min_budget_bytes=%d]: %s", max(smallest, 0), msg)
	}
	return codedError(err)
}

// PipelineSolve plans the chain chainJSON (chainplan.chain/v1) over several devices as
// requestJSON asks ({"algo": "madpipe", "gpus": 4, "memory_bytes": N, "min_memory": false,
// "faster_memory": false, "bandwidth": B, "weight_copies": 2, "activation_model": "saved",
// "headroom": 0, "no_temporaries": false, "checkpoint": false, "time_limit_s": 0,
// "microbatches": 0, "require_solver": false}; every field but gpus and bandwidth may be
// left out for its default) and returns {"plan": {...}, "notes": [...]}: the
// chainplan.pipeline/v1 plan and the planner's notes for the user. Nothing is stored.
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
		return "", pipelineError(err)
	}
	b, err := json.Marshal(map[string]any{"plan": p, "notes": nonNil(notes)})
	return string(b), codedError(err)
}

// PipelineSolveRun plans the chain of stored run runID as a pipeline (see PipelineSolve),
// records the plan like every plan (plans.plan_json holds the document; docs/sql.md) and
// returns {"plan_id": N, "plan": {...}, "notes": [...], "reused": false}; "replan": false
// (the default) gives back the plan stored for the same request on the run, reused true.
func PipelineSolveRun(dbPath string, runID int64, requestJSON string) (result string, err error) {
	defer recoverError(&err)
	req, err := parsePipelineRequest(requestJSON)
	if err != nil {
		return "", codedError(err)
	}
	var planErr error
	err = withService(dbPath, false, func(ctx context.Context, s *service.Service) error {
		got, err := s.PlanPipelineRun(ctx, service.RunID(runID), req)
		if err != nil {
			planErr = err
			return err
		}
		b, err := json.Marshal(map[string]any{"plan_id": got.PlanID, "plan": got.Plan, "notes": nonNil(got.Notes),
			"reused": got.Reused})
		result = string(b)
		return err
	})
	if planErr != nil {
		return "", pipelineError(planErr)
	}
	return result, err
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
