package planner

import (
	"fmt"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/offload"
	"github.com/chainplan/chainplan/planner/simulate"
)

// replaySequence is the Simulate of the checkpointing algorithms: package simulate
// replays the sequence in exact bytes, with the random-number states the executor keeps
// for the plan (Chain.ReplayStateBytes), as the plan's peak counts them.
func replaySequence(c *chainplan.Chain, p *chainplan.Plan, limitBytes int64) (Replay, error) {
	return replayHolding(c, c.ReplayStateBytes(p.Sequence), p, limitBytes)
}

// replayHolding is replaySequence on c (a copy of the chain the states were counted on)
// with heldBytes of random-number states.
func replayHolding(c *chainplan.Chain, heldBytes int64, p *chainplan.Plan, limitBytes int64) (Replay, error) {
	if err := c.Validate(); err != nil {
		return Replay{}, err
	}
	if p.Offload != nil {
		return Replay{}, fmt.Errorf("%w: a %s plan has no offload section, this one has", chainplan.ErrInvalidPlan, p.Algo)
	}
	rep := simulate.ReplayHolding(c, p.Sequence, limitBytes, heldBytes)
	if err := rep.Err(); err != nil {
		return Replay{}, err
	}
	return Replay{Makespan: rep.Makespan, PeakBytes: rep.Peak}, nil
}

// replayOffload is the Simulate of the offloading algorithms: the family's validator
// (offload.Validate) replays the sequence and its transfers in the plan's memory model and
// checks the executor's positions the plan carries against its transfers and timing.
func replayOffload(c *chainplan.Chain, p *chainplan.Plan, limitBytes int64) (Replay, error) {
	v, err := offload.Validate(c, p, limitBytes)
	if err != nil {
		return Replay{}, err
	}
	if err := v.Main.Err(); err != nil {
		return Replay{}, err
	}
	if len(v.Positions) > 0 {
		return Replay{}, simulate.IssuesError("plan", v.Positions)
	}
	return Replay{Makespan: v.Main.Makespan, PeakBytes: v.Main.PeakBytes}, nil
}
