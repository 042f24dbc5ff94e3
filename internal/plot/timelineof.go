package plot

import (
	"fmt"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/simulate"
)

// TimelineOf computes the memory timeline of plan p on chain c with the simulator
// (simulate.Trace): each operation in sequence order, the memory it needs while it runs,
// and the peak. measuredPeak is what executions of the plan measured (0: none). A plan of
// another family than checkpointing (an offloading plan, whose memory depends on its
// transfers) or one the simulator finds invalid fails with an error wrapping
// chainplan.ErrUnsupported or chainplan.ErrInvalidPlan.
func TimelineOf(c *chainplan.Chain, p *chainplan.Plan, measuredPeak int64) (*TimelineData, error) {
	if p.Offload != nil {
		return nil, fmt.Errorf("%w: timeline: %s plans offload activations; their memory timeline needs the offload simulator's trace",
			chainplan.ErrUnsupported, p.Algo)
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
