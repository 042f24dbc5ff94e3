// Package offsim replays offloading schedules: a compute sequence of F_all, F_ck, F_none
// and B operations (rotor's) on one stream, and ordered offload/prefetch transfers of
// activations on one GPU↔host link. It is the independent oracle of the offloading
// planners (planner/offload, planner/heuristic, planner/pofo) and of `chainplan simulate`:
// it knows nothing of how a schedule was found.
//
// Source: pofo spec §5 (shared/specs/pofo.md, cited as "spec §x.y"): the logical pass
// (§5.2, Analyze), memory at time τ in the integral (O.7) and fractional (O.7”/OR.5) models
// (§5.3), the no-wait timing (§5.4, Simulate) and the checker of an explicit timing (§5.5,
// Check). docs/pofo.md records the readings adopted.
//
// Beside the replay it gives the planners what they share about schedules: the analysis
// the heuristics choose their offloads from (Analysis), the schedules they build (StoreAll,
// WithTransfers), and the positions at which the Python executor issues, waits for and
// releases each transfer (Positions).
//
// Units: sizes in bytes, times in the chain's unit (seconds for profiled chains), the
// bandwidth β in bytes per time unit.
package offsim
