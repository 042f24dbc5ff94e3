// Package offload is the offloading family: training schedules that move activations to
// host memory over one GPU↔host link and bring them back in time, alone or combined with
// rematerialization, and the simulator every such plan is replayed by. Source: chapters 3
// and 4 of A. Shilova's thesis (Memory Saving Strategies for Deep Neural Network Training,
// Université de Bordeaux, 2021; chapter 4 published as Beaumont, Eyraud-Dubois, Shilova,
// NeurIPS 2021), specified in shared/specs/pofo.md, cited as "spec §x.y"; docs/pofo.md
// records how every ambiguous passage is read.
//
// One file (or a pofo_ group) per algorithm, each with the same signature, the Solver
// type, and a direct smallest-budget search:
//
//   - POFO, the optimal persistent combination of offloading and rematerialization
//     (SolvePOFO, MinBudgetPOFO; pofo*.go): the forward and loss recurrences OC of spec
//     §4.5-4.6, their fill, the reconstruction of §4.11, and the portfolio that compares
//     the DP's schedules with rotor's, AUTOCAPPER's and OPPORTUNIST's (docs/pofo.md,
//     "Candidates");
//   - DYNPROG, offloading only (SolveDynProg, MinBudgetDynProg; dynprog*.go, spec §3);
//   - GREEDY, the shortest prefix of activations that fits (SolveGreedy), and the lower
//     bound of Proposition 3 (LowerBound);
//   - AUTOCAPPER and OPPORTUNIST, the heuristics of spec §4.13 (SolveAutoCapper,
//     SolveOpportunist): no optimality guarantee, and not bound by OR.1-OR.5.
//
// What they share: Options, the plan document they return (plan.go: the schedule
// replayed in both memory models, with its timing and the executor's positions), the
// smallest-budget search (budget.go), and the store-all peak M_peak and the low budget of
// the thesis's sweeps (StoreAllPeak, LowBudget).
//
// The simulator (sim_*.go) is the family's independent oracle and the validator of
// `chainplan simulate`: the logical pass (§5.2, Analyze), memory at time τ in the integral
// and fractional models (§5.3), the no-wait timing (§5.4, Simulate), the checker of an
// explicit timing (§5.5, Check) and of the executor's positions (Positions,
// CheckPositions). It reads only the schedule and the chain, never how a schedule was
// found. The chain in memory units and POFO's backward phase C_Δ live in the one internal
// helper, internal/units.
//
// Units: sizes in bytes, times in the chain's unit (seconds for profiled chains), the
// bandwidth β in bytes per time unit. Budgets are the total activation memory, the chain
// input a_0 included. The dynamic programs work on memory discretized as in rotor
// (unit = max(1, floor(budget/slots))); every returned plan is replayed by the simulator
// with the exact sizes, and its makespan and peak are the simulator's.
package offload
