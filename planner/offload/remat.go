package offload

import (
	"github.com/chainplan/chainplan/planner/rotor"
)

// rematSlots returns the slots of the heuristics' rematerialization for a budget: rotor's
// default unless set, and never fewer than 2(N+4) for N stages. With fewer, the rounding
// of the terms of one memory check can exceed the whole budget at any budget, and rotor's
// smallest-budget search, which an infeasible budget starts, does not stop.
func rematSlots(opts Options, budget int64, n int) int64 {
	s := opts.SlotsFor(budget, rotor.DefaultSlots)
	if opts.Slots < 0 {
		return s // exact bytes
	}
	return max(s, int64(2*(n+4)))
}

// rotorOptions are the options of the rematerialization the heuristics use (rematSlots):
// rotor's default slots unless set, never fewer than 2(N+4), exact bytes for Slots < 0.
// POFO's rotor candidate and smallest-budget search use them too.
func rotorOptions(opts Options, n int) rotor.Options {
	if opts.Slots < 0 {
		return rotor.Options{Slots: -1}
	}
	return rotor.Options{Slots: rematSlots(opts, 0, n)}
}
