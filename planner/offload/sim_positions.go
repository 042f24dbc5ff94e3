package offload

import (
	"fmt"
	"math"
	"sort"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/offload/internal/units"
	remat "github.com/chainplan/chainplan/planner/simulate"
)

// Positions returns where the offloading executor (python/chainplan/executors) handles
// each transfer of s between the operations of the sequence, given the schedule's timing tm
// (nil: none), following pofo spec §5.6 (docs/formats-schedule.md, "Positions"):
//
//   - an offload is issued right after its anchor; a prefetch just before the operation
//     running at its planned start in tm (the last one starting at or before it), never
//     after its anchor; without a timing, together with the previous transfer, and in a
//     schedule synchronized at the loss not before the backward phase. A transfer is never
//     issued before the previous one (link order);
//   - the compute stream waits for a prefetch before its anchor;
//   - an offloaded tensor's device memory is released once it is issued and every forward
//     operation that reads it from then until its prefetch is issued has run: normally at
//     once, or after the next forward, which may read it while the copy runs.
//
// The loss's forward and backward run together outside the executor: a position between
// them moves after the backward of the loss. The schedule must pass the logical checks of
// spec §5.2 (Analyze); errors: ErrInvalidChain, ErrInvalidPlan for a schedule that does
// not, or whose link order issues a prefetch after its anchor.
func Positions(c *chainplan.Chain, s Schedule, tm *chainplan.Timing) ([]chainplan.Position, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	lg := Analyze(units.Exact(c), s)
	if len(lg.Issues) > 0 {
		return nil, remat.IssuesError("schedule", lg.Issues)
	}
	if tm != nil && (len(tm.ComputeStart) != len(s.Compute) || len(tm.TransferStart) != len(s.Transfers)) {
		return nil, fmt.Errorf("%w: the timing has %d compute and %d transfer starts, the schedule %d operations and %d transfers",
			chainplan.ErrInvalidPlan, len(tm.ComputeStart), len(tm.TransferStart), len(s.Compute), len(s.Transfers))
	}
	return lg.positions(s.SyncAtLoss, tm)
}

// positions is Positions on an analysis free of issues. It works on the executor's
// positions p = 0..n ("just before operation p"; n: after the last) and returns them as
// operation indices (p − 1 after, p before).
func (lg *Analysis) positions(sync bool, tm *chainplan.Timing) ([]chainplan.Position, error) {
	cut := lg.Loss
	// norm moves the position between the loss's forward and backward after the backward.
	norm := func(p int) int {
		if p == cut+1 {
			return cut + 2
		}
		return p
	}
	out := make([]chainplan.Position, len(lg.xfers))
	issue := make([]int, len(lg.xfers))
	prev := 0
	for j, x := range lg.xfers {
		var p int
		switch {
		case x.dir == chainplan.TransferOffload:
			p = x.anchor + 1
		case tm != nil:
			p = min(max(runningAt(tm.ComputeStart, tm.TransferStart[j]), 0), x.anchor)
		case sync:
			p = max(prev, cut+2)
		default:
			p = prev
		}
		p = max(norm(p), prev)
		if x.dir == chainplan.TransferPrefetch && p > norm(x.anchor) {
			return nil, fmt.Errorf("%w: transfer %d (prefetch %s before %d): link order issues it after op %d (%s), which needs it",
				chainplan.ErrInvalidPlan, j, lg.Insts[x.inst].Tensor, x.anchor, x.anchor, lg.Ops[x.anchor])
		}
		issue[j], prev = p, p
		out[j].IssueAfter = p - 1
		if x.dir == chainplan.TransferPrefetch {
			w := norm(x.anchor)
			out[j].WaitBefore = &w
		}
	}
	for j, x := range lg.xfers {
		if x.dir != chainplan.TransferOffload {
			continue
		}
		in := &lg.Insts[x.inst]
		// The copy is dropped once the prefetch is issued: later readers read the new one.
		until := math.MaxInt
		if in.Pre >= 0 {
			until = issue[in.Pre]
		}
		rel := issue[j]
		for _, r := range in.Readers {
			if r >= issue[j] && r < until && lg.Ops[r].Kind != chainplan.B {
				rel = max(rel, r+1)
			}
		}
		after := norm(rel) - 1
		out[j].ReleaseAfter = &after
	}
	return out, nil
}

// runningAt returns the last operation whose start is at or before τ (up to a part in 10⁹),
// −1 when none: the operation running when a transfer starts at τ.
func runningAt(starts []float64, τ float64) int {
	limit := τ + 1e-9*max(1, math.Abs(τ))
	return sort.Search(len(starts), func(i int) bool { return starts[i] > limit }) - 1
}

// CheckPositions compares the positions a plan carries with those Positions derives from
// its sequence, transfers and timing, and returns one issue per field that differs, naming
// it. A plan without positions (written before they existed) and a schedule with logical
// issues (the replay reports those) have none to compare. Errors: ErrInvalidChain.
func CheckPositions(c *chainplan.Chain, p *chainplan.Plan) ([]Issue, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	o := p.Offload
	if o == nil || o.Positions == nil {
		return nil, nil
	}
	want, err := Positions(c, ScheduleOf(p), o.Timing)
	if err != nil {
		return []Issue{{Op: -1, Transfer: -1, Msg: "positions: " + err.Error()}}, nil
	}
	if len(o.Positions) != len(want) {
		return []Issue{{Op: -1, Transfer: -1, Msg: fmt.Sprintf("positions: %d entries for %d transfers", len(o.Positions), len(want))}}, nil
	}
	var out []Issue
	for j, w := range want {
		got := o.Positions[j]
		for _, f := range []struct {
			name      string
			got, want *int
		}{{"issue_after", &got.IssueAfter, &w.IssueAfter}, {"wait_before", got.WaitBefore, w.WaitBefore},
			{"release_after", got.ReleaseAfter, w.ReleaseAfter}} {
			if f.want == nil && f.got == nil || f.want != nil && f.got != nil && *f.want == *f.got {
				continue
			}
			out = append(out, Issue{Op: -1, Transfer: j, Msg: fmt.Sprintf("positions[%d].%s is %s, the transfers and timing give %s",
				j, f.name, optInt(f.got), optInt(f.want))})
		}
	}
	return out, nil
}

func optInt(p *int) string {
	if p == nil {
		return "absent"
	}
	return fmt.Sprint(*p)
}
