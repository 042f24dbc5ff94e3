package simulate

import (
	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/discretize"
)

// Step is one operation of a replay placed on the time axis: it runs from Start to End
// (the sums of the durations of the operations before it, and its own) and, in the chain's
// units, finds Before in memory, needs During while it runs (what is stored, its output
// and its temporary overhead) and leaves After.
type Step struct {
	Index  int          `json:"index"`
	Op     chainplan.Op `json:"op"`
	Start  float64      `json:"start"`
	End    float64      `json:"end"`
	Before int64        `json:"before"`
	During int64        `json:"during"`
	After  int64        `json:"after"`
}

// Trace replays seq on c in exact bytes, as Replay does without a limit, and returns the
// memory over time: one Step per operation whose stage is in range (an operation the
// replay skips has none), with the report of the replay. The steps of an invalid sequence
// follow the replay's rule of going on as if the operation had run.
//
// The time complexity of Trace is O(len(seq) + N).
func Trace(c *chainplan.Chain, seq []chainplan.Op) ([]Step, *Report) {
	steps := make([]Step, 0, len(seq))
	rep := run(discretize.Exact(c), seq, -1, func(s Step) { steps = append(steps, s) }, false)
	return steps, rep
}
