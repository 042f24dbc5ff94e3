package offload

import (
	"fmt"
	"math"

	"github.com/chainplan/chainplan"
)

// Validation is what Validate finds of an offloading plan.
type Validation struct {
	// Main is the replay in the plan's memory model, which decides validity.
	Main *Report
	// Estimates are the replay's outcome in each memory model, fractional then integral.
	Estimates []chainplan.Estimate
	// Timing, Positions and Claims are the issues of the plan's own timing (checked as
	// given, each message prefixed "the plan's timing: "), of the executor's positions it
	// carries, and of its claimed makespan and peak against Main. They are looked for only
	// when Main is valid.
	Timing, Positions, Claims []Issue
}

// Issues returns every issue: Main's, then the timing's, the positions' and the claims';
// empty for a valid plan.
func (v *Validation) Issues() []Issue {
	out := append([]Issue{}, v.Main.Issues...)
	out = append(out, v.Timing...)
	out = append(out, v.Positions...)
	return append(out, v.Claims...)
}

// Validate is the family's validator of an offloading plan p of chain c against a memory
// limit (negative: none), the one that `chainplan simulate` reports and the registry's
// replay applies: the plan's sequence and transfers replayed in both memory models, the
// plan's timing checked as given (spec §5.5), its positions against the replay's timing
// (CheckPositions), and its claimed makespan and peak against the replay (a zero claim is
// not checked). Errors: a bad chain or options, or a plan without an offload section
// (ErrInvalidPlan); an invalid plan is a Validation with issues.
func Validate(c *chainplan.Chain, p *chainplan.Plan, limitBytes int64) (*Validation, error) {
	o := p.Offload
	if o == nil {
		return nil, fmt.Errorf("%w: a %s plan needs its offload section", chainplan.ErrInvalidPlan, p.Algo)
	}
	s := ScheduleOf(p)
	opts := func(m chainplan.MemoryModel) SimOptions {
		return SimOptions{BandwidthBytesPerS: o.BandwidthBytesPerS, LimitBytes: limitBytes, Model: m}
	}
	v := &Validation{}
	for _, m := range []chainplan.MemoryModel{chainplan.Fractional, chainplan.Integral} {
		r, err := Simulate(c, s, opts(m))
		if err != nil {
			return nil, err
		}
		v.Estimates = append(v.Estimates, chainplan.Estimate{MemoryModel: m, Valid: r.Valid, Makespan: r.Makespan, PeakBytes: r.PeakBytes})
		if m == o.MemoryModel {
			v.Main = r
		}
	}
	if v.Main == nil {
		return nil, fmt.Errorf("%w: unknown memory model %q (want fractional or integral)", chainplan.ErrInvalidPlan, o.MemoryModel)
	}
	if !v.Main.Valid {
		return v, nil
	}
	if o.Timing != nil {
		r, err := Check(c, s, *o.Timing, opts(o.MemoryModel))
		if err != nil {
			return nil, err
		}
		for _, is := range r.Issues {
			is.Msg = "the plan's timing: " + is.Msg
			v.Timing = append(v.Timing, is)
		}
	}
	is, err := CheckPositions(c, p)
	if err != nil {
		return nil, err
	}
	v.Positions = is
	claim := func(format string, args ...any) {
		v.Claims = append(v.Claims, Issue{Op: -1, Transfer: -1, Msg: fmt.Sprintf(format, args...)})
	}
	if p.Makespan != 0 && math.Abs(p.Makespan-v.Main.Makespan) > 1e-9*math.Abs(v.Main.Makespan) {
		claim("the plan claims makespan %.9g, the replay gives %.9g", p.Makespan, v.Main.Makespan)
	}
	if p.PeakBytes != 0 && p.PeakBytes != v.Main.PeakBytes {
		claim("the plan claims a peak of %d B, the replay gives %d B", p.PeakBytes, v.Main.PeakBytes)
	}
	return v, nil
}
