package pipesim

import "github.com/chainplan/chainplan"

// DefaultMinibatches is the number of mini-batches simulated when Options.Minibatches is 0:
// enough for every schedule of up to 16 stages to reach its steady state in the second
// half, over which the period is measured.
const DefaultMinibatches = 16

// taskBytes is the memory of one task while a simulation runs (its books, its place in
// the orders and, with Record, its span): the simulation's size, which check holds to
// chainplan.TableLimit before anything is allocated (docs/pipesim.md, "Limits").
const taskBytes = 100

// Options say what to simulate. The zero value of Minibatches means DefaultMinibatches;
// Schedule and Microbatches have no default.
type Options struct {
	// Schedule is the schedule to run.
	Schedule Schedule
	// Microbatches is N, the micro-batches of one mini-batch (one optimizer step), ≥ 1.
	// The chain's measurements are those of one micro-batch; a TiMePReSt backward covers
	// the whole mini-batch and lasts N times the stage's backward (linear in the batch,
	// spec §4.10 trap 1), its gradient transfer N times the boundary's bytes.
	Microbatches int
	// Minibatches is K, the mini-batches simulated (0: DefaultMinibatches).
	Minibatches int
	// UnitTime makes every forward, backward and recomputation last 1 and every transfer
	// 0, with no link resources: the time points of the papers' figures (spec §4.4).
	UnitTime bool
	// MaxInflight caps, for TiMePReSt only, the mini-batches in flight: the first stage
	// starts a new mini-batch only while fewer than MaxInflight have started and not
	// finished their backward there (0: no cap, as in the paper; spec §4.10 trap 7).
	MaxInflight int
	// Flush makes Periodic run each mini-batch as one step of chainplan's pipeline runner:
	// its N micro-batches through the plan's order, as soon as they can, then a flush
	// (docs/pipeline.md). Without it the plan's pipeline runs without end, micro-batch b
	// entering at b·period (the plan's own model). Periodic only.
	Flush bool
	// Record keeps every task's start and end (Result.Timeline), for the Chrome trace
	// and the Gantt picture.
	Record bool
}

// check validates o for setup su and fills in the defaults.
func (o Options) check(su *Setup) (Options, error) {
	if _, err := ParseSchedule(string(o.Schedule)); err != nil {
		return o, err
	}
	if o.Microbatches < 1 {
		return o, optionErr("microbatches", "want N ≥ 1 micro-batches per mini-batch (got %d)", o.Microbatches)
	}
	switch {
	case o.Minibatches == 0:
		o.Minibatches = DefaultMinibatches
	case o.Minibatches < 0:
		return o, optionErr("minibatches", "want K ≥ 1 mini-batches (got %d)", o.Minibatches)
	}
	s := len(su.stages)
	limit, err := chainplan.TableLimit()
	if err != nil {
		return o, err
	}
	if tasks := float64(o.Minibatches) * float64(o.Microbatches) * float64(s) * 4; tasks*taskBytes > float64(limit) {
		return o, optionErr("minibatches", "%d mini-batches of %d micro-batches on %d stages make %.3g tasks, %s while the simulation runs, "+
			"over the limit of %s (%s): simulate fewer mini-batches or micro-batches",
			o.Minibatches, o.Microbatches, s, tasks, chainplan.FormatBytes(int64(min(tasks*taskBytes, 1<<62))),
			chainplan.FormatBytes(limit), chainplan.TableLimitEnv)
	}
	switch {
	case o.MaxInflight < 0:
		return o, optionErr("max_inflight", "want a cap ≥ 1 on the mini-batches in flight, or 0 for none (got %d)", o.MaxInflight)
	case o.MaxInflight > 0 && o.Schedule != TiMePReSt:
		return o, optionErr("max_inflight", "caps the mini-batches in flight of timeprest only (got schedule %s, whose order bounds them)", o.Schedule)
	case o.Flush && o.Schedule != Periodic:
		return o, optionErr("flush", "applies to periodic only (%s flushes or not by definition)", o.Schedule)
	case o.Schedule == Periodic && su.plan == nil:
		return o, optionErr("plan", "periodic replays a chainplan.pipeline/v1 plan: give one (PlanSetup)")
	case o.Schedule != Periodic && su.plan != nil:
		return o, optionErr("plan", "a plan is replayed by schedule periodic; to run %s on the plan's partition, give its stages", o.Schedule)
	case o.Schedule == Periodic && o.UnitTime:
		return o, optionErr("unit_time", "periodic replays the plan's times; unit time applies to the other schedules")
	case o.Schedule == TwoBW && o.Microbatches < s-1:
		return o, optionErr("microbatches", "2bw needs N ≥ S−1 = %d micro-batches per mini-batch (got %d): with fewer, a stage would need the update of mini-batch k−2 before that mini-batch's last backward reaches it (the paper asks m ≥ d)", s-1, o.Microbatches)
	}
	return o, nil
}
