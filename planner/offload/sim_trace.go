package offload

import (
	"fmt"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/offload/internal/units"
)

// Sample is the memory of a timed schedule at one instant, in bytes.
type Sample struct {
	Time  float64 `json:"time"`
	Bytes float64 `json:"bytes"`
}

// Trace returns the memory over time of schedule s under the timing tm (a plan's
// Offload.Timing), as the checker of spec §5.3 evaluates it: at the start and end of each
// operation (its transient included) and of each idle gap, and at every transfer
// breakpoint inside them, from both sides, in time order. Between two samples the memory
// is linear (fractional model) or constant (integral model, whose steps show as two samples
// at one instant). It also returns Check's report. Errors are Check's; a schedule Check
// finds invalid is an error wrapping chainplan.ErrInvalidPlan.
func Trace(c *chainplan.Chain, s Schedule, tm chainplan.Timing, opts SimOptions) ([]Sample, *Report, error) {
	rep, err := Check(c, s, tm, opts)
	if err != nil {
		return nil, nil, err
	}
	if err := rep.Err(); err != nil {
		return nil, rep, err
	}
	p, err := opts.params(s)
	if err != nil {
		return nil, nil, err
	}
	lg := Analyze(units.Exact(c), s)
	t := newTimes(len(s.Compute), len(s.Transfers))
	copy(t.start, tm.ComputeStart)
	copy(t.xs, tm.TransferStart)
	res := lg.check(t, p, s.SyncAtLoss) // computes the ends
	var out []Sample
	lg.memoryPeak(t, p, res.memTol, func(τ, v float64) { out = append(out, Sample{τ, v}) }, func(int, float64) {})
	if len(out) == 0 {
		return nil, rep, fmt.Errorf("%w: the schedule has no operation", chainplan.ErrInvalidPlan)
	}
	return out, rep, nil
}
