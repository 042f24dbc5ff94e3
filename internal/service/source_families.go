package service

import (
	"context"
	"fmt"

	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/pipesim"
	"github.com/chainplan/chainplan/planner/workload"
)

// What each family does with a resolved source (Input): a stored run is planned and
// recorded through the run's own path (PlanRun, PlanPipelineRun, SimulateRun,
// RunWorkload), anything else is planned without the store. These are the only places
// that look at which kind a source was, after Resolve.

// PlanInput plans the checkpointing, offloading or multichain request req on in: a
// stored run through PlanRun (recorded), a profile through PlanProfile, a chain through
// PlanChain, a bundle through PlanMultiChain.
func PlanInput(ctx context.Context, in *Input, req Request) (*Planned, error) {
	switch {
	case in.Run != nil:
		return in.svc.PlanRun(ctx, RunID(in.RunID), req)
	case in.Profile != nil:
		return PlanProfile(in.Profile, req)
	case in.MultiChain != nil:
		return PlanMultiChain(in.MultiChain, req)
	}
	return PlanChain(in.Chain, req)
}

// PlanPipelineInput plans a pipeline of in: a stored run through PlanPipelineRun
// (recorded, or a stored plan of the same request reused), anything else with
// SolvePipeline (PlanID 0; when planning fails, got still holds the planner's notes, which
// may say why). ModelWeights reports whether the chain is the measured model's (a run or a
// profile, whose layers' weights the runner checks), not a chain file's.
func PlanPipelineInput(ctx context.Context, in *Input, req pipeplan.Request) (got *PlannedPipeline, modelWeights bool, err error) {
	if in.Run != nil {
		got, err := in.svc.PlanPipelineRun(ctx, RunID(in.RunID), req)
		return got, true, err
	}
	c, err := in.ChainOf(ctx)
	if err != nil {
		return nil, false, err
	}
	p, notes, err := SolvePipeline(c, req)
	return &PlannedPipeline{Plan: p, Notes: notes, Chain: c}, in.Profile != nil, err
}

// SimulateInput simulates req on in: a stored run through SimulateRun (recorded, compared
// with the runner's executions; stored nil otherwise), anything else with Simulate.
func SimulateInput(ctx context.Context, in *Input, req PipesimRequest) (res *pipesim.Result, stored *SimulatedRun, err error) {
	if in.Run != nil {
		got, err := in.svc.SimulateRun(ctx, RunID(in.RunID), req)
		if err != nil {
			return nil, nil, err
		}
		return got.Result, got, nil
	}
	if req.PlanID != 0 {
		return nil, nil, &inputError{"a stored plan (plan_id) is simulated on its run: give the run, or no source"}
	}
	c, err := in.ChainOf(ctx)
	if err != nil {
		return nil, nil, err
	}
	res, err = Simulate(c, req)
	return res, nil, err
}

// WorkloadOf returns the parallel planners' workload of in: a stored run's (RunWorkload), a
// profile's, or a chain's measured at batch samples of dtypeBytes-byte elements (a chain
// does not record them; batchName is the batch's name in the caller's words, for the
// message when it is missing: "--batch", "batch").
func WorkloadOf(ctx context.Context, in *Input, batch, dtypeBytes int64, batchName string) (*workload.Model, error) {
	switch {
	case in.Run != nil:
		m, _, err := in.svc.RunWorkload(ctx, RunID(in.RunID))
		return m, err
	case in.Profile != nil:
		return workload.FromProfile(in.Profile.Meta, in.Profile.Stages())
	}
	c, err := in.ChainOf(ctx)
	if err != nil {
		return nil, err
	}
	m, err := ChainWorkload(c, in.Name, batch, dtypeBytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", batchName, err)
	}
	return m, nil
}
