package service

import (
	"cmp"
	"context"
	"fmt"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner"
	"github.com/chainplan/chainplan/store"
)

// SolvePipeline plans chain c as a pipeline: at req's memory, or with req.MinMemory at the
// algorithm's smallest memory per device, found directly, then solved once. The notes are
// sentences for the user (madpipe: no MILP solver found, and how to install one). Errors:
// the chain's *chainplan.ChainError, a *pipeplan.OptionError naming the option, a
// *pipeplan.InfeasibleError with the smallest memory that fits (or a lower bound),
// chainplan.ErrUnsupported for an unknown algorithm (planner.SolvePipeline checks the name,
// once for every front end) or a smallest memory the algorithm cannot find.
func SolvePipeline(c *chainplan.Chain, req pipeplan.Request) (*pipeplan.Plan, []string, error) {
	p, notes, err := planner.SolvePipeline(c, req)
	if err == nil && req.Microbatches > 0 {
		p.Microbatches = req.Microbatches
	}
	return p, notes, err
}

// PipelineParams is the parameter set stored with every pipeline plan
// (plans.params_json; docs/sql.md).
type PipelineParams struct {
	Algo            string  `json:"algo"`                  // the algorithm asked for
	GPUs            int     `json:"gpus"`                  // P
	Memory          Budget  `json:"memory"`                // asked: "min", "faster" or bytes per device
	MemoryBytes     int64   `json:"memory_bytes"`          // used: the plan's memory per device
	Bandwidth       float64 `json:"bandwidth_bytes_per_s"` // β
	WeightCopies    int     `json:"weight_copies"`         // C
	ActivationModel string  `json:"activation_model"`      // input or saved
	Temporaries     bool    `json:"temporaries"`           // transient memory counted
	Headroom        float64 `json:"headroom"`              // share of the memory left free
	Checkpoint      bool    `json:"checkpoint"`            // stages may recompute
	Microbatches    int     `json:"microbatches"`          // per step, 0 when not given
	TimeLimitS      float64 `json:"time_limit_s"`          // madpipe's MILP limit, 0 for the default
	Chosen          string  `json:"chosen"`                // the candidate the plan is, when the algorithm compares several
	Source          string  `json:"source"`                // who asked: cli or python
}

// pipelineParamsFor returns the parameters recorded for pipeline plan p computed for req.
func pipelineParamsFor(req pipeplan.Request, p *pipeplan.Plan) PipelineParams {
	prm := PipelineParams{Algo: cmp.Or(req.Algo, p.Algo), GPUs: p.GPUs, MemoryBytes: p.MemoryBytes, Bandwidth: p.Bandwidth,
		WeightCopies: p.WeightCopies, ActivationModel: string(p.ActivationModel), Temporaries: p.Temporaries,
		Headroom: p.Headroom, Checkpoint: p.Checkpoint, Microbatches: p.Microbatches,
		TimeLimitS: req.TimeLimit.Seconds(), Chosen: p.Chosen, Source: req.Source}
	prm.Memory = askedMemory(req)
	return prm
}

// askedMemory returns the memory the request asked for.
func askedMemory(req pipeplan.Request) Budget {
	switch {
	case req.MinMemory:
		return Budget{Min: true}
	case req.FasterMemory:
		return Budget{Faster: true}
	}
	return Budget{Bytes: req.Options.MemoryBytes}
}

// PlannedPipeline is a pipeline plan of a stored run, as PlanPipelineRun recorded it.
type PlannedPipeline struct {
	RunID  int64
	PlanID int64
	Chain  *chainplan.Chain // the run's chain, which the plan partitions
	Plan   *pipeplan.Plan
	Notes  []string // SolvePipeline's notes
	// Reused is true when the plan was stored before for the same request and run.
	Reused bool
}

// PlanPipelineRun plans the chain of the run ref names as a pipeline and records the plan
// with pipelineParamsFor(req, plan); unless req.Replan, a plan stored before for the same
// request on the same run by this chainplan version is returned instead (Reused), so that
// the same launch gives the same plan and one plan gathers its executions. Nothing is
// recorded when planning fails. Errors as SolvePipeline's, plus chainplan.ErrNotFound for
// a missing run and ErrBadInput for an unknown source.
func (s *Service) PlanPipelineRun(ctx context.Context, ref RunRef, req pipeplan.Request) (*PlannedPipeline, error) {
	if err := checkSource(req.Source); err != nil {
		return nil, err
	}
	id, c, err := s.runChain(ctx, ref)
	if err != nil {
		return nil, err
	}
	if !req.Replan {
		if got, err := s.storedPipeline(ctx, id, c, req); err != nil || got != nil {
			return got, err
		}
	}
	p, notes, err := SolvePipeline(c, req)
	if err != nil {
		return nil, err
	}
	planID, err := s.recordPipelinePlan(ctx, id, req, p)
	if err != nil {
		return nil, err
	}
	return &PlannedPipeline{RunID: id, PlanID: planID, Chain: c, Plan: p, Notes: notes}, nil
}

// recordPipelinePlan stores pipeline plan p, computed for req from run runID's chain, with
// pipelineParamsFor(req, p) and the service's version, and returns the plan id.
func (s *Service) recordPipelinePlan(ctx context.Context, runID int64, req pipeplan.Request, p *pipeplan.Plan) (int64, error) {
	if err := checkSource(req.Source); err != nil {
		return 0, err
	}
	doc, err := p.MarshalIndent()
	if err != nil {
		return 0, err
	}
	var peak int64
	for _, m := range p.MemoryPerGPU {
		peak = max(peak, m)
	}
	return s.db.RecordPipelinePlan(ctx, runID, &store.PipelinePlan{Algo: p.Algo, MemoryBytes: p.MemoryBytes, Period: p.Period,
		PeakBytes: peak, SolveMS: p.SolveMS, NumOps: len(p.Pattern), Document: doc}, pipelineParamsFor(req, p), s.version)
}

// StoredPipelinePlan returns stored plan planID as a pipeline plan, with the chain of the
// run it was computed from, and ok true; ok is false (and the rest nil) for a plan of
// another family. Errors: chainplan.ErrNotFound for a missing plan or run, the parser's
// *pipeplan.PlanError for a stored document that does not read.
func (s *Service) StoredPipelinePlan(ctx context.Context, planID int64) (p *pipeplan.Plan, c *chainplan.Chain, ok bool, err error) {
	doc, err := s.db.PlanDocument(ctx, planID)
	if err != nil || !pipeplan.IsPipelinePlan(doc) {
		return nil, nil, false, err
	}
	if p, err = pipeplan.Parse(doc); err != nil {
		return nil, nil, false, fmt.Errorf("stored plan %d: %w", planID, err)
	}
	sp, err := s.db.Plan(ctx, planID)
	if err != nil {
		return nil, nil, false, err
	}
	if c, err = s.RunChain(ctx, sp.RunID); err != nil {
		return nil, nil, false, err
	}
	return p, c, true, nil
}
