package plot

import (
	"fmt"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/offload"
	"github.com/chainplan/chainplan/planner/simulate"
)

// TimelineOf computes the memory timeline of plan p on chain c with the simulators: for a
// checkpointing plan simulate.Trace (each operation in sequence order and the memory it
// needs while it runs), for an offloading plan offload.Trace on the plan's timing (the
// memory as the transfers release and reserve it, the transfers on the link lane). It
// marks the peak; measuredPeak is what executions of the plan measured (0: none). A plan
// the simulator finds invalid fails with an error wrapping chainplan.ErrInvalidPlan.
func TimelineOf(c *chainplan.Chain, p *chainplan.Plan, measuredPeak int64) (*TimelineData, error) {
	if p.Offload != nil {
		return offloadTimelineOf(c, p, measuredPeak)
	}
	steps, rep := simulate.Trace(c, p.Sequence)
	if err := rep.Err(); err != nil {
		return nil, fmt.Errorf("timeline of the %s plan: %w", p.Algo, err)
	}
	d := &TimelineData{
		Title:             fmt.Sprintf("Memory timeline: %s at %s", p.Algo, chainplan.FormatBytes(p.BudgetBytes)),
		BudgetBytes:       p.BudgetBytes,
		PeakBytes:         rep.Peak,
		MeasuredPeakBytes: measuredPeak,
	}
	for _, s := range steps {
		d.Memory = append(d.Memory, Level{Start: s.Start, End: s.End, Bytes: s.During})
		d.Ops = append(d.Ops, Span{Start: s.Start, End: s.End, Kind: string(s.Op.Kind), Label: opLabel(s.Op)})
		if s.Index == rep.PeakIndex {
			d.PeakTime = (s.Start + s.End) / 2
		}
	}
	return d, nil
}

// opLabel is the short name of an operation drawn in its box: "F3" for any forward, "B3".
func opLabel(op chainplan.Op) string {
	if op.Kind == chainplan.B {
		return fmt.Sprintf("B%d", op.Stage)
	}
	return fmt.Sprintf("F%d", op.Stage)
}

// offloadTimelineOf is TimelineOf for a plan with an offload section: the compute
// operations and the transfers placed by the plan's timing (the simulator's no-wait timing
// when the plan has none), the memory sampled by offload.Trace.
func offloadTimelineOf(c *chainplan.Chain, p *chainplan.Plan, measuredPeak int64) (*TimelineData, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	off := p.Offload
	s := offload.ScheduleOf(p)
	opts := offload.SimOptions{BandwidthBytesPerS: off.BandwidthBytesPerS, LimitBytes: -1, Model: off.MemoryModel}
	tm := off.Timing
	if tm == nil {
		r, err := offload.Simulate(c, s, opts)
		if err != nil {
			return nil, err
		}
		if err := r.Err(); err != nil {
			return nil, fmt.Errorf("timeline of the %s plan: %w", p.Algo, err)
		}
		tm = r.Timing
	}
	samples, _, err := offload.Trace(c, s, *tm, opts)
	if err != nil {
		return nil, fmt.Errorf("timeline of the %s plan: %w", p.Algo, err)
	}
	d := &TimelineData{
		Title: fmt.Sprintf("Memory timeline: %s at %s, %.4g GB/s link", p.Algo, chainplan.FormatBytes(p.BudgetBytes),
			off.BandwidthBytesPerS/1e9),
		BudgetBytes:       p.BudgetBytes,
		MeasuredPeakBytes: measuredPeak,
	}
	// The peak is the largest sample: the checker's report rounds its peak with a
	// tolerance that grows with the limit, and this replay has none.
	best := -1.0
	for _, x := range samples {
		// A sample is an instant: a level from it to itself, joined to the next by a line.
		d.Memory = append(d.Memory, Level{Start: x.Time, End: x.Time, Bytes: int64(x.Bytes + 0.5)})
		if x.Bytes > best {
			best, d.PeakTime = x.Bytes, x.Time
		}
	}
	d.PeakBytes = int64(best + 0.5)
	for k, op := range p.Sequence {
		start := tm.ComputeStart[k]
		d.Ops = append(d.Ops, Span{Start: start, End: start + opTime(c, op), Kind: string(op.Kind), Label: opLabel(op)})
	}
	for j, x := range off.Transfers {
		start := tm.TransferStart[j]
		d.Transfers = append(d.Transfers, Span{Start: start, End: start + float64(x.Bytes)/off.BandwidthBytesPerS,
			Kind: string(x.Dir), Label: x.Tensor.String()})
	}
	return d, nil
}

// opTime is the duration of an operation: its stage's forward or backward time (the loss
// is stage L+1).
func opTime(c *chainplan.Chain, op chainplan.Op) float64 {
	fwd, bwd := c.Loss.FwdTime, c.Loss.BwdTime
	if op.Stage <= c.Len() {
		st := c.Stages[op.Stage-1]
		fwd, bwd = st.FwdTime, st.BwdTime
	}
	if op.Kind == chainplan.B {
		return bwd
	}
	return fwd
}
