package simulate

import (
	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/discretize"
)

// RunFrom replays seq on layers s..t of c in exact bytes, from the state in which a
// recomputing pipeline stage starts its backward: its input a_{s−1} and the gradient δ_t
// of its output in memory, nothing else (the state of rotor's C_MP(s, t, ·), spec §3.2).
// The stages of seq are numbered from 1 (layer s is stage 1, layer t stage t−s+1) and the
// sequence must run every backward, B_{t−s+1} down to B_1. limitBytes counts everything
// in memory, a_{s−1} and δ_t included (negative: no limit). The report's Makespan is the
// backward's duration, Peak its highest memory; the rules are Run's.
func RunFrom(c *chainplan.Chain, s, t int, seq []chainplan.Op, limitBytes int64) *Report {
	return run(discretize.Sub(c, s, t), seq, limitBytes, nil, true)
}

// TraceFrom is RunFrom with the memory over time, as Trace gives it for a whole chain.
func TraceFrom(c *chainplan.Chain, s, t int, seq []chainplan.Op) ([]Step, *Report) {
	steps := make([]Step, 0, len(seq))
	rep := run(discretize.Sub(c, s, t), seq, -1, func(st Step) { steps = append(steps, st) }, true)
	return steps, rep
}
