package service

import (
	"context"
	"fmt"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/plot"
	"github.com/chainplan/chainplan/planner"
	"github.com/chainplan/chainplan/store"
)

// StoredPlan returns stored plan planID with the chain of the run it was computed from.
// Errors: chainplan.ErrNotFound for a missing plan or run, a *chainplan.ChainError for a
// run whose sizes were not measured.
func (s *Service) StoredPlan(ctx context.Context, planID int64) (*store.StoredPlan, *chainplan.Chain, error) {
	sp, err := s.db.Plan(ctx, planID)
	if err != nil {
		return nil, nil, err
	}
	c, err := s.RunChain(ctx, sp.RunID)
	if err != nil {
		return nil, nil, err
	}
	return sp, c, nil
}

// StoredMultichainPlan returns stored multichain plan planID with the bundle of the run it
// was computed from. Errors: chainplan.ErrNotFound for a missing plan or run,
// chainplan.ErrUnsupported for a plan of one chain, RunMultiChain's.
func (s *Service) StoredMultichainPlan(ctx context.Context, planID int64) (*store.StoredPlan, *chainplan.MultiChain, error) {
	sp, err := s.db.Plan(ctx, planID)
	if err != nil {
		return nil, nil, err
	}
	if sp.Plan.Multichain == nil {
		return nil, nil, fmt.Errorf("%w: plan %d (%s) schedules one chain, not towers joined at the loss",
			chainplan.ErrUnsupported, planID, sp.Plan.Algo)
	}
	mc, err := s.RunMultiChain(ctx, sp.RunID)
	if err != nil {
		return nil, nil, err
	}
	return sp, mc, nil
}

// MeasuredPeak returns the largest peak the executions of plan planID measured, 0 when it
// never ran.
func (s *Service) MeasuredPeak(ctx context.Context, sp *store.StoredPlan) (int64, error) {
	outs, err := s.db.Outcomes(ctx, store.OutcomeFilter{RunID: sp.RunID})
	if err != nil {
		return 0, err
	}
	for _, o := range outs {
		if o.PlanID == sp.ID {
			return o.MeasuredPeakBytes, nil
		}
	}
	return 0, nil
}

// PlanTimeline returns the memory timeline of stored plan planID on its run's chain
// (plot.TimelineOf), with the largest peak its executions measured. Errors are
// StoredPlan's and TimelineOf's, and chainplan.ErrInvalidPlan for an offloading plan
// stored before the database kept its transfers.
func (s *Service) PlanTimeline(ctx context.Context, planID int64) (*plot.TimelineData, error) {
	if sp, err := s.db.Plan(ctx, planID); err == nil && sp.Plan.Multichain != nil {
		return s.multichainTimeline(ctx, planID)
	}
	sp, c, err := s.StoredPlan(ctx, planID)
	if err != nil {
		return nil, err
	}
	if e, _ := planner.Lookup(sp.Plan.Algo); sp.Rebuilt && e.Family == planner.Offloading {
		return nil, fmt.Errorf("%w: plan %d (%s) was stored before the database kept whole plans (migration 0003): "+
			"its transfers were not kept, so its memory over time is unknown", chainplan.ErrInvalidPlan, sp.ID, sp.Plan.Algo)
	}
	measured, err := s.MeasuredPeak(ctx, sp)
	if err != nil {
		return nil, err
	}
	d, err := plot.TimelineOf(c, &sp.Plan, measured)
	if err != nil {
		return nil, fmt.Errorf("plan %d: %w", planID, err)
	}
	d.Title = fmt.Sprintf("Plan %d (run %d): %s at %s", sp.ID, sp.RunID, sp.Plan.Algo, chainplan.FormatBytes(sp.Plan.BudgetBytes))
	return d, nil
}

// multichainTimeline is PlanTimeline for a multichain plan, on its run's bundle.
func (s *Service) multichainTimeline(ctx context.Context, planID int64) (*plot.TimelineData, error) {
	sp, mc, err := s.StoredMultichainPlan(ctx, planID)
	if err != nil {
		return nil, err
	}
	measured, err := s.MeasuredPeak(ctx, sp)
	if err != nil {
		return nil, err
	}
	d, err := plot.MultichainTimelineOf(mc, &sp.Plan, measured)
	if err != nil {
		return nil, fmt.Errorf("plan %d: %w", planID, err)
	}
	d.Title = fmt.Sprintf("Plan %d (run %d): %s at %s, %d towers", sp.ID, sp.RunID, sp.Plan.Algo,
		chainplan.FormatBytes(sp.Plan.BudgetBytes), mc.K())
	return d, nil
}

// History returns predicted against measured for the plans f selects that have executions.
// A selection with none fails with an error wrapping ErrBadInput that says what it
// selected (what: "run 3", "model resnet50").
func (s *Service) History(ctx context.Context, f store.OutcomeFilter, what string) (*plot.HistoryData, error) {
	outs, err := s.db.Outcomes(ctx, f)
	if err != nil {
		return nil, err
	}
	d := &plot.HistoryData{Title: "Predicted against measured: " + what}
	for _, o := range outs {
		if o.Executions == 0 {
			continue
		}
		e, _ := planner.Lookup(o.Algo)
		d.Outcomes = append(d.Outcomes, plot.Outcome{PlanID: o.PlanID, Algo: o.Algo, BudgetBytes: o.BudgetBytes,
			PredictedPeak: o.PredictedPeak, MeasuredPeak: o.MeasuredPeakBytes,
			PredictedTime: o.PredictedTimeS, MeasuredTime: o.MeasuredTimeS, Pipeline: e.Family == planner.Pipeline})
	}
	if len(d.Outcomes) == 0 {
		return nil, &inputError{fmt.Sprintf("%s has %d plans and no execution of any: nothing to compare "+
			"(executions are recorded when a plan runs, e.g. make demo)", what, len(outs))}
	}
	return d, nil
}
