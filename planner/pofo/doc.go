// Package pofo plans training schedules that combine activation offloading (moving
// activations to host memory over one GPU↔host link and bringing them back in time) with
// rematerialization (recomputing them): POFO, the optimal persistent combination of the
// two.
//
// Source: A. Shilova, Memory Saving Strategies for Deep Neural Network Training, PhD thesis,
// Université de Bordeaux, 2021, chapter 4 (published as O. Beaumont, L. Eyraud-Dubois,
// A. Shilova, "Efficient Combination of Rematerialization and Offloading for Training
// DNNs", NeurIPS 2021). The implementable specification is shared/specs/pofo.md, cited as
// "spec §x.y" below; docs/pofo.md records how every ambiguous passage is read.
//
// The package holds the forward and loss recurrences OC of spec §4.5-4.6 and their
// bottom-up fill, the reconstruction of spec §4.11, and Solve: the DP's schedules compared
// with rotor's, AUTOCAPPER's and OPPORTUNIST's (the portfolio, docs/pofo.md
// "Candidates"), MinBudget, and the budgets of the thesis's sweeps (StoreAllPeak,
// LowBudget). Its neighbours: planner/internal/cdelta (the backward phase C_Δ of §4.8 and
// the discretization both phases share), planner/offsim (the simulator every plan is
// replayed by), planner/offload (offloading only, chapter 3), planner/heuristic (the
// heuristics of §4.13) and planner/offplan (options and plan assembly).
//
// Units: sizes in bytes, times in the chain's unit (seconds for profiled chains), the
// bandwidth β in bytes per time unit. Budgets are the total activation memory, the chain
// input a_0 included. The dynamic program works on memory discretized as in rotor
// (unit = max(1, floor(budget/slots))); every returned plan is replayed by the simulator
// with the exact sizes, and its makespan and peak are the simulator's.
package pofo
