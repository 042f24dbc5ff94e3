package pipesim

import "fmt"

// Schedule names a pipeline schedule the simulator runs. The names are those of the
// planner registry's Simulation entries (planner/algorithms.go), stored with every
// simulation (simulations.schedule).
type Schedule string

// The schedules (spec §5.4's table; docs/pipesim.md).
const (
	// GPipe runs, per mini-batch, every micro-batch's forward, then every backward in
	// reverse micro-batch order, then flushes: the weights are updated once all backwards
	// of the mini-batch are done, before the next mini-batch starts.
	GPipe Schedule = "gpipe"
	// OneFOneBFlush is PipeDream-Flush: stage s (0-based, of S) runs min(S−s, N) forwards,
	// then alternates one backward and one forward, then the remaining backwards; a flush
	// per mini-batch.
	OneFOneBFlush Schedule = "1f1b-flush"
	// PipeDreamAsync is PipeDream's 1F1B without flush: the same per-stage order over the
	// stream of every mini-batch's micro-batches; a micro-batch's forward uses the newest
	// weights complete at the first stage (vertical sync), stashed until its backward
	// (weight stashing); each stage updates once per mini-batch.
	PipeDreamAsync Schedule = "pipedream-async"
	// TwoBW is PipeDream-2BW: PipeDream's order, one update per mini-batch, applied with a
	// delay of one: mini-batch k (1-based) uses the weights after k−2 updates, so each
	// stage holds two versions. It needs N ≥ S−1 micro-batches per mini-batch.
	TwoBW Schedule = "2bw"
	// TiMePReSt is nF1B (spec §4.5): N micro-batch forwards, then one backward of the whole
	// mini-batch; a ready backward goes before any forward; no flush, no weight stashing
	// (the backward uses the newest weights), vertical sync; optionally a cap on the
	// mini-batches in flight.
	TiMePReSt Schedule = "timeprest"
	// Periodic replays a chainplan.pipeline/v1 plan: each device and link runs the plan's
	// operations in the order of their planned times; micro-batch b enters at b·period and
	// everything else runs as soon as it can, or (Options.Flush) each mini-batch runs as a
	// step of the plan's runner, with a flush after it.
	Periodic Schedule = "periodic"
)

// Schedules are the schedules in the order help texts list them.
var Schedules = []Schedule{GPipe, OneFOneBFlush, PipeDreamAsync, TwoBW, TiMePReSt, Periodic}

// Summary is one line of help text.
func (s Schedule) Summary() string {
	switch s {
	case GPipe:
		return "GPipe: all forwards, then all backwards, flush per mini-batch"
	case OneFOneBFlush:
		return "PipeDream-Flush: warm-up, one forward one backward, flush per mini-batch"
	case PipeDreamAsync:
		return "PipeDream 1F1B without flush, weight stashing (staleness S-1)"
	case TwoBW:
		return "PipeDream-2BW: 1F1B without flush, two weight versions, delay 1"
	case TiMePReSt:
		return "TiMePReSt nF1B: backward of the whole mini-batch first, no flush, no stashing"
	case Periodic:
		return "replay a chainplan.pipeline/v1 plan (madpipe, contiguous, pipedream)"
	}
	return ""
}

// ParseSchedule returns the schedule named s, or an error listing the schedules.
func ParseSchedule(s string) (Schedule, error) {
	for _, x := range Schedules {
		if string(x) == s {
			return x, nil
		}
	}
	return "", &OptionError{Planner: planner, Field: "schedule", Msg: fmt.Sprintf("unknown schedule %q (want one of %v)", s, Schedules)}
}
