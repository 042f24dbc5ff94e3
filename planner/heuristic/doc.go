// Package heuristic holds the two heuristics of pofo spec §4.13 that combine offloading
// with rematerialization: AUTOCAPPER (SolveAutoCapper: rotor's schedules for several
// limits, capped by offloading until they fit) and OPPORTUNIST (SolveOpportunist: offload
// while the link is free, rematerialize each group afterwards). They choose what to
// offload from the simulator's analysis of a sequence (offsim.Analysis) and replay every
// schedule with planner/offsim; POFO's Solve (planner/pofo) compares their schedules with
// its own (AutoCapper, Opportunist).
//
// Neither is bound by Assumptions 4 (OR.1-OR.5): their schedules are timed without
// synchronization at the loss. They have no optimality guarantee. docs/pofo.md records the
// readings of the spec's short description.
package heuristic
