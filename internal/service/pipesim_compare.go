package service

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/pipesim"
)

// RankComparison is one rank of a measured execution of a pipeline plan (python's
// PipelineRunner.measure, one executions row per rank; docs/pipeline.md) beside the
// simulation of the same step: the plan's partition and model, the schedule the runner ran,
// its micro-batch count, one mini-batch with a flush. Times are seconds; a NaN means the
// side has no such figure (no steady state in the step, a built-in schedule forced onto
// another order).
type RankComparison struct {
	PlanID      int64  `json:"plan_id"`
	ExecutionID int64  `json:"execution_id"`
	Rank        int    `json:"rank"`
	Schedule    string `json:"schedule"` // the runner's: plan, Schedule1F1B or ScheduleGPipe
	// Microbatches is N, the micro-batches of the measured step.
	Microbatches int `json:"microbatches"`
	// StepS is the rank's median step time (measured) and the simulated step (predicted).
	MeasuredStepS  float64 `json:"measured_step_s"`
	PredictedStepS float64 `json:"predicted_step_s"`
	// MicrobatchS is the mean spacing of the forward starts of the rank's stages over the
	// plan's steady periods, the quantity the plan's period predicts, measured as the
	// runner does and simulated the same way.
	MeasuredMicrobatchS  float64 `json:"measured_microbatch_s"`
	PredictedMicrobatchS float64 `json:"predicted_microbatch_s"`
	// PeakBytes is the rank's peak memory: measured, and the simulated device's.
	MeasuredPeakBytes  int64 `json:"measured_peak_bytes"`
	PredictedPeakBytes int64 `json:"predicted_peak_bytes"`
}

// runnerSchedules maps the simulated schedules to the names the pipeline runner records
// for the same order (executions.metadata_json's schedule).
var runnerSchedules = map[pipesim.Schedule]string{
	pipesim.Periodic:      "plan",
	pipesim.OneFOneBFlush: "Schedule1F1B",
	pipesim.GPipe:         "ScheduleGPipe",
}

// compareExecutions simulates, for every stored execution of the plan req names (or of
// every pipeline plan of run runID with the simulated partition) that ran the simulated
// schedule, the runner's step, and sets it beside the measurement, rank by rank.
func (s *Service) compareExecutions(ctx context.Context, runID int64, c *chainplan.Chain, req PipesimRequest, res *pipesim.Result) ([]RankComparison, error) {
	name, ok := runnerSchedules[res.Schedule]
	if !ok {
		return nil, nil
	}
	ids := []int64{req.PlanID}
	if req.PlanID == 0 {
		plans, err := s.db.Plans(ctx, runID)
		if err != nil {
			return nil, err
		}
		ids = ids[:0]
		for _, sp := range plans {
			ids = append(ids, sp.ID)
		}
	}
	var out []RankComparison
	other := map[string]bool{} // schedules the runner ran instead, for the hint
	for _, id := range ids {
		p, _, isPipeline, err := s.StoredPipelinePlan(ctx, id)
		if err != nil {
			return nil, err
		}
		if !isPipeline || req.PlanID == 0 && !slices.Equal(p.Stages, res.Stages) {
			continue
		}
		exs, err := s.db.Executions(ctx, id)
		if err != nil {
			return nil, err
		}
		sims := map[int]*pipesim.Result{} // by micro-batch count
		for _, e := range exs {
			m := e.Metadata
			n, err := strconv.Atoi(m["microbatches"])
			rank, rerr := strconv.Atoi(m["rank"])
			if m["kind"] == "pipeline" && m["schedule"] != name && m["schedule"] != "" {
				other[m["schedule"]] = true
			}
			if m["kind"] != "pipeline" || m["schedule"] != name || err != nil || rerr != nil || n < 1 || rank < 0 || rank >= p.GPUs {
				continue
			}
			sim, ok := sims[n]
			if !ok {
				step := PipesimRequest{Schedule: string(res.Schedule), Plan: p, Microbatches: n, Minibatches: 2,
					Flush: res.Schedule == pipesim.Periodic, Record: true}
				if sim, err = Simulate(c, step); err != nil {
					return nil, err
				}
				sims[n] = sim
			}
			out = append(out, RankComparison{PlanID: id, ExecutionID: e.ID, Rank: rank, Schedule: name, Microbatches: n,
				MeasuredStepS: metaFloat(m, "rank_step_time_s"), PredictedStepS: sim.Period,
				MeasuredMicrobatchS: metaFloat(m, "microbatch_time_s"), PredictedMicrobatchS: steadyMicrobatchTime(p, n, sim, rank),
				MeasuredPeakBytes: e.PeakBytes, PredictedPeakBytes: sim.PerDevice[rank].PeakBytes})
		}
	}
	if len(out) == 0 && len(other) > 0 {
		res.Warnings = append(res.Warnings, otherSchedulesHint(name, other))
	}
	return out, nil
}

// otherSchedulesHint says that the stored executions ran other schedules than name, and
// which simulated schedule compares with each.
func otherSchedulesHint(name string, other map[string]bool) string {
	var ran []string
	for _, runner := range slices.Sorted(maps.Keys(other)) {
		hint := runner
		for sched, n := range runnerSchedules {
			if n == runner {
				hint = fmt.Sprintf("%s (simulate --schedule %s to compare)", runner, sched)
			}
		}
		ran = append(ran, hint)
	}
	return fmt.Sprintf("no stored execution of the pipeline runner ran %s: they ran %s", name, strings.Join(ran, ", "))
}

// metaFloat reads a float the runner wrote into an execution's metadata (NaN when absent).
func metaFloat(m map[string]string, key string) float64 {
	v, err := strconv.ParseFloat(m[key], 64)
	if err != nil {
		return math.NaN()
	}
	return v
}

// steadyMicrobatchTime is the runner's measure of a step (python chainplan.pipeline.measure
// steady_time) on a simulated one: for each stage of rank, the mean spacing of its
// forwards' starts over the micro-batches that run in the plan's steady periods (period q
// runs micro-batch q − shift; the steady periods are max shift .. N−1+min shift), averaged
// over the rank's stages; NaN when no stage has two.
func steadyMicrobatchTime(p *pipeplan.Plan, n int, sim *pipesim.Result, rank int) float64 {
	lo, hi := math.MaxInt, math.MinInt
	for _, o := range p.Pattern {
		if o.Op == pipeplan.F || o.Op == pipeplan.B {
			lo, hi = min(lo, o.Shift), max(hi, o.Shift)
		}
	}
	var slopes []float64
	for _, k := range p.StagesOn(rank) {
		shift := p.Pattern[p.Find(pipeplan.F, k)].Shift
		first, last := hi-shift, n+lo-shift-1 // the steady micro-batches of stage k
		if last <= first {
			continue
		}
		starts := map[int]float64{}
		for _, sp := range sim.Timeline {
			if sp.Kind == "F" && sp.Stage == k && sp.Minibatch == 0 {
				starts[sp.Microbatch] = sp.Start
			}
		}
		slopes = append(slopes, (starts[last]-starts[first])/float64(last-first))
	}
	if len(slopes) == 0 {
		return math.NaN()
	}
	var sum float64
	for _, v := range slopes {
		sum += v
	}
	return sum / float64(len(slopes))
}

// MarshalJSON writes the comparison with null for the figures a side does not have (NaN).
func (r RankComparison) MarshalJSON() ([]byte, error) {
	num := func(v float64) *float64 {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil
		}
		return &v
	}
	type plain RankComparison // without the method
	return json.Marshal(struct {
		plain
		MeasuredStepS        *float64 `json:"measured_step_s"`
		PredictedStepS       *float64 `json:"predicted_step_s"`
		MeasuredMicrobatchS  *float64 `json:"measured_microbatch_s"`
		PredictedMicrobatchS *float64 `json:"predicted_microbatch_s"`
	}{plain(r), num(r.MeasuredStepS), num(r.PredictedStepS), num(r.MeasuredMicrobatchS), num(r.PredictedMicrobatchS)})
}
