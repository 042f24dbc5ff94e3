package plot

import (
	"fmt"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/multichain"
	"github.com/chainplan/chainplan/planner/simulate"
)

// DefaultLinearBudgets is the number of budgets at which MultichainFrontierOf solves
// multichain-linear (each solve runs rotor on every concatenation order).
const DefaultLinearBudgets = 12

// MultichainFrontierOf computes the series Frontier draws for the towers of bundle mc: the
// multichain frontier (the dynamic program's makespan at every budget, and no
// recomputation from its peak on: multichain.SolveFrontier), multichain-linear (rotor on
// the concatenated towers) at opts.Budgets budgets from its smallest to the
// no-recomputation peak, per-block checkpointing (every stage's input kept, each stage
// recomputed once: torch.utils.checkpoint around each block) and store-all at their exact
// peaks. opts.Slots is rotor's grid for multichain-linear, opts.Chosen a plan to mark; the
// offloading options do not apply. Errors: ErrInvalidChain, and the planners' errors.
func MultichainFrontierOf(mc *chainplan.MultiChain, opts FrontierOptions) (*FrontierData, error) {
	f, err := multichain.SolveFrontier(mc)
	if err != nil {
		return nil, fmt.Errorf("multichain frontier: %w", err)
	}
	d := &FrontierData{Title: opts.Title, SumTime: f.SumTime, Overhead: opts.Overhead}
	if d.Title == "" {
		d.Title = fmt.Sprintf("Budget versus time: %d towers joined at the loss", mc.K())
	}
	s := Series{Name: "multichain", Kind: Steps}
	for _, p := range f.Points {
		s.Points = append(s.Points, Point{Bytes: float64(p.BudgetBytes), Makespan: p.Makespan})
	}
	d.Series = append(d.Series, s)
	lin := multichain.Options{Method: multichain.Linear, Slots: opts.Slots}
	if lo, err := multichain.MinBudget(mc, lin); err == nil {
		n := opts.Budgets
		if n <= 0 {
			n = DefaultLinearBudgets
		}
		ls := Series{Name: "multichain-linear", Kind: Points}
		hi := max(lo, f.StoreAllPeakByte)
		for i := range n {
			b := lo
			if n > 1 {
				b = lo + int64(float64(hi-lo)*float64(i)/float64(n-1))
			}
			p, err := multichain.Solve(mc, b, lin)
			if err != nil {
				return nil, fmt.Errorf("multichain-linear at %d bytes: %w", b, err)
			}
			ls.Points = append(ls.Points, Point{Bytes: float64(p.PeakBytes), Makespan: p.Makespan})
		}
		d.Series = append(d.Series, ls)
	}
	for _, b := range []struct {
		name string
		seq  []chainplan.Op
	}{{"per-block", multichain.PerBlockSequence(mc)}, {"store-all", multichain.StoreAllSequence(mc)}} {
		rep := simulate.RunMulti(mc, b.seq, -1)
		if err := rep.Err(); err != nil {
			return nil, fmt.Errorf("%s: %w", b.name, err)
		}
		d.Series = append(d.Series, Series{Name: b.name, Kind: Points,
			Points: []Point{{Bytes: float64(rep.Peak), Makespan: rep.Makespan}}})
	}
	if p := opts.Chosen; p != nil {
		d.Chosen = &Mark{Label: fmt.Sprintf("%s at %s", p.Algo, chainplan.FormatBytes(p.BudgetBytes)),
			Point: Point{Bytes: float64(p.BudgetBytes), Makespan: p.Makespan}}
	}
	return d, nil
}

// MultichainTimelineOf computes the memory timeline of multichain plan p on bundle mc
// with simulate.TraceMulti: each operation in sequence order (labelled "F2.3" for stage 3
// of branch 2, "L" for the loss) and the memory it needs while it runs, the peak marked;
// measuredPeak is what executions measured (0: none). A plan the simulator finds invalid
// fails with an error wrapping chainplan.ErrInvalidPlan.
func MultichainTimelineOf(mc *chainplan.MultiChain, p *chainplan.Plan, measuredPeak int64) (*TimelineData, error) {
	if err := mc.Validate(); err != nil {
		return nil, err
	}
	steps, rep := simulate.TraceMulti(mc, p.Sequence)
	if err := rep.Err(); err != nil {
		return nil, fmt.Errorf("timeline of the %s plan: %w", p.Algo, err)
	}
	d := &TimelineData{
		Title:             fmt.Sprintf("Memory timeline: %s at %s, %d towers", p.Algo, chainplan.FormatBytes(p.BudgetBytes), mc.K()),
		BudgetBytes:       p.BudgetBytes,
		PeakBytes:         rep.Peak,
		MeasuredPeakBytes: measuredPeak,
	}
	for _, s := range steps {
		d.Memory = append(d.Memory, Level{Start: s.Start, End: s.End, Bytes: s.During})
		if s.Op.Kind != chainplan.FreeGrad {
			label := fmt.Sprintf("%s%d.%d", opLabel(s.Op)[:1], s.Op.Branch, s.Op.Stage)
			if s.Op.Branch == 0 {
				label = "L"
			}
			d.Ops = append(d.Ops, Span{Start: s.Start, End: s.End, Kind: string(s.Op.Kind), Label: label})
		}
		if s.Index == rep.PeakIndex {
			d.PeakTime = (s.Start + s.End) / 2
		}
	}
	return d, nil
}
