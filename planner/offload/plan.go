package offload

import (
	"fmt"
	"time"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/offload/internal/units"
)

// finish replays s with the exact sizes in both memory models and assembles the plan of
// algo: the makespan, peak and timing of the options' model, both models' estimates, and
// the positions of the executor (Positions). A schedule that does not replay in the
// plan's model is an internal error for the dynamic programs; the heuristics check their
// schedules before. start is when the solve began, for Plan.SolveMS.
func finish(algo string, c *chainplan.Chain, budgetBytes, slots int64, s Schedule, opts Options, start time.Time) (*chainplan.Plan, error) {
	exact := units.Exact(c)
	var main *Report
	off := &chainplan.Offload{
		BandwidthBytesPerS: opts.BandwidthBytesPerS, MemoryModel: opts.MemoryModel(), SyncAtLoss: s.SyncAtLoss,
		Transfers: s.Transfers,
	}
	if off.Transfers == nil {
		off.Transfers = []chainplan.Transfer{}
	}
	for _, m := range []chainplan.MemoryModel{chainplan.Fractional, chainplan.Integral} {
		r := Replay(exact, s, SimOptions{BandwidthBytesPerS: opts.BandwidthBytesPerS, LimitBytes: budgetBytes, Model: m})
		off.Estimates = append(off.Estimates, chainplan.Estimate{MemoryModel: m, Valid: r.Valid, Makespan: r.Makespan, PeakBytes: r.PeakBytes})
		if m == opts.MemoryModel() {
			main = r
		}
	}
	if !main.Valid {
		return nil, fmt.Errorf("%s: internal error: the schedule does not replay in the %s model: %w", algo, opts.MemoryModel(), main.Err())
	}
	off.OffloadedBytes = main.OffloadedBytes
	off.Timing = main.Timing
	pos, err := Positions(c, s, off.Timing)
	if err != nil {
		return nil, fmt.Errorf("%s: internal error: the executor's positions: %w", algo, err)
	}
	off.Positions = pos
	return &chainplan.Plan{
		Algo: algo, Feasible: true, Makespan: main.Makespan, PeakBytes: main.PeakBytes,
		BudgetBytes: budgetBytes, Slots: slots, SolveMS: msSince(start),
		Sequence: s.Compute, Offload: off,
	}, nil
}

// msSince returns the milliseconds since t, for Plan.SolveMS and Candidate.SolveMS.
func msSince(t time.Time) float64 { return float64(time.Since(t).Microseconds()) / 1000 }
