// Package offload plans training schedules that offload activations to host memory
// without recomputing any: chapter 3 of A. Shilova's thesis (pofo spec §3, shared/
// specs/pofo.md). It holds the lower bound of Proposition 3 (LowerBound), GREEDY
// (SolveGreedy) and the dynamic program DYNPROG of Algorithm 5 with its discretization
// (Solve, the registry's "offload").
//
// Every plan is replayed by planner/offsim with the exact sizes before it is returned; its
// makespan and peak are the simulator's. Units: sizes in bytes, times in the chain's unit,
// the bandwidth β in bytes per time unit; budgets are the total activation memory, the
// chain input a_0 included. docs/pofo.md records the readings of the spec.
package offload
