package pybind

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/plot"
	"github.com/chainplan/chainplan/internal/service"
	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/store"
)

// plotOptions is the JSON form of PlotFrontier's options.
type plotOptions struct {
	Title     string          `json:"title"`
	Slots     int64           `json:"slots"`
	Bandwidth float64         `json:"bandwidth"`
	Budgets   int             `json:"budgets"`
	Overhead  bool            `json:"overhead"`
	Plan      json.RawMessage `json:"plan"`
}

// PlotFrontier draws the budget-versus-time frontier of the chain of the source of
// callJSON ({"source": {...}, "request": options}) as an SVG document
// (internal/plot.FrontierOf, the picture of `chainplan plot frontier`). The options are,
// all optional: "title"; "slots" (rotor's grid, 0: 500); "bandwidth" (bytes per second:
// adds pofo and offload-only) and "budgets" (their number of budgets, 0:
// plot.DefaultOffloadBudgets); "overhead" (draw the overhead instead of the makespan);
// "plan" (a plan document to mark).
func PlotFrontier(callJSON string) (svg string, err error) {
	defer recoverError(&err)
	var c call
	if err := readCall(callJSON, "plot_frontier", &c); err != nil {
		return "", codedError(err)
	}
	var o plotOptions
	if err := strictUnmarshal(c.request(), &o); err != nil {
		return "", codedError(fmt.Errorf("%w: frontier plot options: %v", errBadRequest, err))
	}
	if o.Slots < 0 || o.Budgets < 0 || o.Bandwidth < 0 {
		return "", codedError(fmt.Errorf("%w: frontier plot options: slots, budgets and bandwidth must not be negative", errBadRequest))
	}
	opts := plot.FrontierOptions{Title: o.Title, Slots: o.Slots, BandwidthBytesPerS: o.Bandwidth,
		Budgets: o.Budgets, Overhead: o.Overhead}
	if len(o.Plan) > 0 && string(o.Plan) != "null" {
		if opts.Chosen, err = chainplan.ParsePlan(o.Plan); err != nil {
			return "", codedError(err)
		}
	}
	var d *plot.FrontierData
	if err := withSource(c.Source, func(ctx context.Context, in *service.Input) error {
		ch, err := in.ChainOf(ctx)
		if err != nil {
			return err
		}
		d, err = plot.FrontierOf(ch, opts)
		return err
	}); err != nil {
		return "", err
	}
	return svgOf(plot.Frontier(d))
}

// timelineRequest is PlotTimeline's request: the plan to draw and the peak its
// executions measured (0: none).
type timelineRequest struct {
	Plan              json.RawMessage `json:"plan"`
	MeasuredPeakBytes int64           `json:"measured_peak_bytes"`
}

// PlotTimeline draws the memory timeline of the request's plan on the chain of the source
// of callJSON ({"source": {...}, "request": {"plan": <chainplan.schedule/v1 document>,
// "measured_peak_bytes": N}}) as an SVG document.
func PlotTimeline(callJSON string) (svg string, err error) {
	defer recoverError(&err)
	var c call
	if err := readCall(callJSON, "plot_timeline", &c); err != nil {
		return "", codedError(err)
	}
	var r timelineRequest
	if err := strictUnmarshal(c.request(), &r); err != nil {
		return "", codedError(fmt.Errorf("%w: timeline request: %v", errBadRequest, err))
	}
	p, err := chainplan.ParsePlan(r.Plan)
	if err != nil {
		return "", codedError(err)
	}
	var d *plot.TimelineData
	if err := withSource(c.Source, func(ctx context.Context, in *service.Input) error {
		ch, err := in.ChainOf(ctx)
		if err != nil {
			return err
		}
		d, err = plot.TimelineOf(ch, p, max(0, r.MeasuredPeakBytes))
		return err
	}); err != nil {
		return "", err
	}
	return svgOf(plot.Timeline(d))
}

// PlotStoredTimeline draws the memory timeline of stored plan planID of the database at
// database on its run's chain, with the peak its executions measured.
func PlotStoredTimeline(database string, planID int64) (svg string, err error) {
	defer recoverError(&err)
	var d *plot.TimelineData
	if err := withDatabase(database, false, func(ctx context.Context, s *service.Service) error {
		var err error
		d, err = s.PlanTimeline(ctx, planID)
		return err
	}); err != nil {
		return "", err
	}
	return svgOf(plot.Timeline(d))
}

// PlotStoredPipeline draws periods periods (0: plot.DefaultPeriods) of stored pipeline
// plan planID as `chainplan plot pipeline --plan-id` does: lanes named after the device its
// run was profiled on, each rank's measured peak beside the predicted one.
func PlotStoredPipeline(database string, planID int64, periods int) (svg string, err error) {
	defer recoverError(&err)
	var d *plot.PipelineData
	if err := withDatabase(database, false, func(ctx context.Context, s *service.Service) error {
		var err error
		d, err = s.PipelinePicture(ctx, planID, periods)
		return err
	}); err != nil {
		return "", err
	}
	return svgOf(plot.Pipeline(d))
}

// PlotHistory draws predicted against measured for the plans of run runID (when
// positive) or of every run of model, from the database.
func PlotHistory(database string, runID int64, model string) (svg string, err error) {
	defer recoverError(&err)
	f, what := store.OutcomeFilter{RunID: runID}, fmt.Sprintf("run %d", runID)
	if runID <= 0 {
		f, what = store.OutcomeFilter{ModelName: model}, "model "+model
	}
	var d *plot.HistoryData
	if err := withDatabase(database, false, func(ctx context.Context, s *service.Service) error {
		var err error
		d, err = s.History(ctx, f, what)
		return err
	}); err != nil {
		return "", err
	}
	return svgOf(plot.History(d))
}

// svgOf encodes a figure as SVG, with a coded error.
func svgOf(f *plot.Figure, err error) (string, error) {
	if err != nil {
		return "", codedError(err)
	}
	b, err := f.SVG()
	return string(b), codedError(err)
}

// PlotPipeline draws periods periods (0: plot.DefaultPeriods) of the pipeline plan
// planJSON (a chainplan.pipeline/v1 document) as an SVG Gantt chart.
func PlotPipeline(planJSON string, periods int) (svg string, err error) {
	defer recoverError(&err)
	p, err := pipeplan.Parse([]byte(planJSON))
	if err != nil {
		return "", codedError(err)
	}
	d, err := plot.PipelineOf(p, periods)
	if err != nil {
		return "", codedError(err)
	}
	return svgOf(plot.Pipeline(d))
}
