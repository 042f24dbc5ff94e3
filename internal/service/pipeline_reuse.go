package service

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner"
	"github.com/chainplan/chainplan/planner/milp"
)

// requestKey is what makes two pipeline requests the same plan: every request field that
// the planners read, with the defaults filled in; not who asked, and not the micro-batches
// per step, which the planners do not read (pipeplan.Request.Microbatches): the runner's
// N = 4 and N = 8 run one plan, whose executions then gather under one plan id.
type requestKey struct {
	Algo            string
	GPUs            int
	Memory          Budget
	Bandwidth       float64
	WeightCopies    int
	ActivationModel string
	Temporaries     bool
	Headroom        float64
	Checkpoint      bool
	TimeLimitS      float64
}

// keyOf returns the request's key, defaults filled in as the planners fill them.
func keyOf(req pipeplan.Request) requestKey {
	return requestKey{Algo: cmp.Or(req.Algo, planner.DefaultPipelineAlgo), GPUs: req.Options.GPUs, Memory: askedMemory(req),
		Bandwidth: req.Options.Bandwidth, WeightCopies: cmp.Or(req.Options.WeightCopies, pipeplan.DefaultWeightCopies),
		ActivationModel: string(cmp.Or(req.Options.ActivationModel, pipeplan.ActivationsSaved)),
		Temporaries:     !req.Options.NoTemporaries, Headroom: req.Options.Headroom, Checkpoint: req.Options.Checkpoint,
		TimeLimitS: cmp.Or(max(req.TimeLimit, 0), milp.DefaultTimeLimit).Seconds()}
}

// key returns the stored parameters' request key.
func (prm PipelineParams) key() requestKey {
	return requestKey{Algo: prm.Algo, GPUs: prm.GPUs, Memory: prm.Memory, Bandwidth: prm.Bandwidth,
		WeightCopies: prm.WeightCopies, ActivationModel: prm.ActivationModel, Temporaries: prm.Temporaries,
		Headroom: prm.Headroom, Checkpoint: prm.Checkpoint, TimeLimitS: cmp.Or(prm.TimeLimitS, milp.DefaultTimeLimit.Seconds())}
}

// storedPipeline returns the newest plan of run runID that this chainplan version computed
// for the same request, or nil; the plan carries req's micro-batches (none when req gives
// none), as a plan computed for req would, whatever the stored document says. A stored
// document that does not read is an error: it was written by this version.
func (s *Service) storedPipeline(ctx context.Context, runID int64, c *chainplan.Chain, req pipeplan.Request) (*PlannedPipeline, error) {
	plans, err := s.db.Plans(ctx, runID)
	if err != nil {
		return nil, err
	}
	want := keyOf(req)
	for i := len(plans) - 1; i >= 0; i-- {
		sp := plans[i]
		if sp.Version != s.version || sp.Plan.Algo != want.Algo {
			continue
		}
		var prm PipelineParams
		if json.Unmarshal(sp.Params, &prm) != nil || prm.key() != want {
			continue
		}
		doc, err := s.db.PlanDocument(ctx, sp.ID)
		if err != nil {
			return nil, err
		}
		p, err := pipeplan.Parse(doc)
		if err != nil {
			return nil, fmt.Errorf("stored plan %d: %w", sp.ID, err)
		}
		p.Microbatches = req.Microbatches
		note := fmt.Sprintf("reused plan %d, planned before for the same request on run %d (replan to plan again)", sp.ID, runID)
		return &PlannedPipeline{RunID: runID, PlanID: sp.ID, Chain: c, Plan: p, Notes: []string{note}, Reused: true}, nil
	}
	return nil, nil
}
