package plot

import (
	"fmt"
	"math"
	"slices"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/pipesim"
)

// SimulationOf lays out a recorded simulation (pipesim.Options.Record) for the pipeline
// picture, Pipeline: one lane per device and per link, each task a box in its stage's
// colour (forwards and sends lighter, backwards, recomputations and gradient sends darker;
// recomputations hatched)
// labelled with its mini-batch and micro-batch ("F2.3"; "B2" for TiMePReSt's backward of a
// whole mini-batch), the dotted lines one steady-state period apart, and each device's
// peak memory against the memory per device. It draws the tasks that start before the
// first minibatches mini-batches have ended (0: DefaultPeriods), so that a long run stays
// legible. Errors wrap chainplan.ErrUnsupported: a result without a timeline, or with no
// time to draw.
func SimulationOf(r *pipesim.Result, minibatches int) (*PipelineData, error) {
	if r.Resources == nil {
		return nil, fmt.Errorf("%w: the simulation did not record its timeline", chainplan.ErrUnsupported)
	}
	if minibatches <= 0 {
		minibatches = DefaultPeriods
	}
	last := min(minibatches, len(r.PerMinibatch))
	end := r.PerMinibatch[last-1].End
	period := r.Period
	if !(period > 0) || math.IsInf(period, 0) {
		return nil, fmt.Errorf("%w: the simulation lasts no time", chainplan.ErrUnsupported)
	}
	title := fmt.Sprintf("%s: %d stages, N = %d, period %s", r.Schedule, len(r.Stages), r.Microbatches, formatTime(period))
	if r.UnitTime { // the axis reads seconds: one per time point
		title = fmt.Sprintf("%s: %d stages, N = %d, period %.4g time points", r.Schedule, len(r.Stages), r.Microbatches, period)
	}
	d := &PipelineData{
		Title:   title,
		Period:  period,
		Periods: max(1, int(math.Ceil(end/period-1e-9))),
		Stages:  len(r.Stages),
		Lanes:   slices.Clone(r.Resources),
		Spans:   make([][]Span, len(r.Resources)),
	}
	for _, sp := range r.Timeline {
		if sp.Start >= end && sp.Start > 0 {
			continue
		}
		label := fmt.Sprintf("%s%d", sp.Kind, sp.Minibatch+1)
		if sp.Microbatch >= 0 && r.Microbatches > 1 {
			label += fmt.Sprintf(".%d", sp.Microbatch+1)
		}
		d.Spans[sp.Resource] = append(d.Spans[sp.Resource], Span{Start: sp.Start, End: sp.End, Kind: sp.Kind, Label: label, Stage: sp.Stage,
			Recompute: sp.Kind == "R"})
	}
	for _, x := range r.PerDevice {
		d.MemoryBytes = append(d.MemoryBytes, x.PeakBytes)
	}
	d.LimitBytes = r.MemoryBytes
	return d, nil
}
