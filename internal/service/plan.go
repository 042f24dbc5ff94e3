package service

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner"
)

// Request is what to plan: the planner's request, whether the budget is the smallest
// feasible one, and who asks.
type Request struct {
	planner.Request
	// Min plans at the algorithm's smallest feasible budget (budget "min"); BudgetBytes
	// is then ignored.
	Min bool
	// Source says who asks, recorded with the plan: SourceCLI, SourcePython or
	// SourceCheckpointed. Solve ignores it.
	Source string
}

// Solve plans chain c: at req.BudgetBytes with planner.Solve, or with req.Min at the
// smallest feasible budget with planner.SolveMin, which finds that budget and its plan in
// one search (no solve at a budget known to fail). The plan's peak includes the
// random-number states its executor keeps (holdingStates), and so does the budget it
// fits. Errors are the planner's (an *chainplan.InfeasibleError naming the smallest
// budget with the states).
func Solve(c *chainplan.Chain, req Request) (*chainplan.Plan, error) {
	var p *chainplan.Plan
	var err error
	if req.Min {
		p, err = planner.SolveMin(c, req.Request)
	} else {
		p, err = planner.Solve(c, req.Request)
	}
	var inf *chainplan.InfeasibleError
	if errors.As(err, &inf) && drawsRandom(c) && !req.Min {
		// The smallest budget it names must hold the smallest plan's states too.
		if least, e := MinBudget(c, req); e == nil {
			inf.MinBudgetBytes = least
		}
	}
	if err != nil {
		return nil, err
	}
	return holdingStates(c, req, p)
}

// SolveMultichain plans bundle mc as Solve plans a chain: at req.BudgetBytes, or with
// req.Min at the smallest feasible budget. req.Algo must name a multichain algorithm.
func SolveMultichain(mc *chainplan.MultiChain, req Request) (*chainplan.Plan, error) {
	if req.Min {
		return planner.SolveMultichainMin(mc, req.Request)
	}
	return planner.SolveMultichain(mc, req.Request)
}

// Planned is a checkpointing plan with what its executor needs besides the document: a
// plan of a stored run as PlanRun recorded it, or of a profile file (PlanFile) or a chain
// (PlanChain), which record nothing.
type Planned struct {
	RunID  int64            // the stored run planned; 0 for a file or a chain
	PlanID int64            // the recorded plan; 0 when nothing was recorded
	Chain  *chainplan.Chain // the chain the plan schedules; nil for a multichain plan
	// MultiChain is the bundle when the input profiles towers joined at the loss and the
	// plan is a multichain plan; nil otherwise.
	MultiChain *chainplan.MultiChain
	Plan       *chainplan.Plan
	// Algo is the algorithm planned with: the request's, or the default the input chose
	// when the request named none (planner.DefaultAlgo).
	Algo string
	// InputShape is the shape of the model input the profile was taken with, nil when it
	// was not recorded (and for a chain, which does not hold one).
	InputShape []int64
}

// PlanRun plans the chain of the run ref names (the bundle of a run of towers joined at the
// loss, for a multichain algorithm) and records the plan with ParamsFor(req, plan). An
// empty req.Algo plans with the run's default algorithm (planner.DefaultAlgo), recorded as
// the algorithm asked for.
// Nothing is recorded when planning fails. Errors: chainplan.ErrNotFound for a missing run,
// a *chainplan.ChainError for a run whose sizes were not measured, chainplan.ErrUnsupported
// for a run of towers and a single-chain algorithm or the converse, the planner's errors
// (*chainplan.InfeasibleError with the smallest budget), ErrBadInput for an unknown source.
func (s *Service) PlanRun(ctx context.Context, ref RunRef, req Request) (*Planned, error) {
	if err := checkSource(req.Source); err != nil {
		return nil, err
	}
	id, err := s.ResolveRun(ctx, ref)
	if err != nil {
		return nil, err
	}
	run, err := s.db.Run(ctx, id)
	if err != nil {
		return nil, err
	}
	got := &Planned{RunID: id, InputShape: run.InputShape}
	if req.Algo == "" {
		if tw, err := run.Towers(); err == nil && tw != nil {
			req.Algo = planner.DefaultMultichainAlgo
		}
	}
	if e, ok := planner.Lookup(req.Algo); ok && e.Family == planner.Multichain {
		if got.MultiChain, err = s.RunMultiChain(ctx, id); err == nil {
			got.Plan, err = SolveMultichain(got.MultiChain, req)
		}
	} else if got.Chain, err = s.RunChain(ctx, id); err == nil {
		if req.Algo == "" {
			req.Algo = planner.DefaultAlgo(got.Chain)
		}
		got.Plan, err = Solve(got.Chain, req)
	}
	if err != nil {
		return nil, err
	}
	got.Algo = req.Algo
	if got.PlanID, err = s.RecordPlan(ctx, id, req, got.Plan); err != nil {
		return nil, err
	}
	return got, nil
}

// RecordPlan stores plan p, computed for req from run runID's chain, with ParamsFor(req,
// p) and the service's version, and returns the plan id.
func (s *Service) RecordPlan(ctx context.Context, runID int64, req Request, p *chainplan.Plan) (int64, error) {
	if err := checkSource(req.Source); err != nil {
		return 0, err
	}
	return s.db.RecordPlan(ctx, runID, p, ParamsFor(req, p), s.version)
}

func checkSource(src string) error {
	if !slices.Contains(sources, src) {
		return &inputError{fmt.Sprintf("source %q: want one of %s", src, strings.Join(sources, ", "))}
	}
	return nil
}
