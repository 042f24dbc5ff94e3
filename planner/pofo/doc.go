// Package pofo plans and checks training schedules that combine activation offloading
// (moving activations to host memory over one GPU↔host link and bringing them back in
// time) with rematerialization (recomputing them).
//
// Source: A. Shilova, Memory Saving Strategies for Deep Neural Network Training, PhD thesis,
// Université de Bordeaux, 2021, chapters 3 and 4 (published as O. Beaumont, L. Eyraud-Dubois,
// A. Shilova, "Efficient Combination of Rematerialization and Offloading for Training
// DNNs", NeurIPS 2021). The implementable specification is shared/specs/pofo.md, cited as
// "spec §x.y" below; docs/pofo.md records how every ambiguous passage is read.
//
// The package holds:
//
//   - an independent simulator (Simulate, Check) for schedules made of compute operations
//     (F_all, F_ck, F_none, B) and ordered offload/prefetch transfers, in the integral
//     (O.7) and fractional (O.7”/OR.5) memory models, spec §5;
//   - offloading only, chapter 3: the lower bound of Proposition 3 (LowerBound), GREEDY
//     (SolveGreedy) and the dynamic program DYNPROG of Algorithm 5 with its discretization
//     (SolveOffload);
//   - POFO, chapter 4: the optimal persistent combination of offloading and
//     rematerialization (Solve), with the forward, loss and backward recurrences of
//     spec §4.5-4.8 and the reconstruction of spec §4.11;
//   - the two heuristics of spec §4.13 (SolveAutoCapper, SolveOpportunist).
//
// Units: sizes in bytes, times in the chain's unit (seconds for profiled chains), the
// bandwidth β in bytes per time unit. Budgets are the total activation memory, the chain
// input a_0 included. The dynamic programs work on memory discretized as in rotor
// (unit = max(1, floor(budget/slots)), sizes rounded up); every returned plan is replayed
// by the simulator with the exact sizes, and its makespan and peak are the simulator's.
package pofo
