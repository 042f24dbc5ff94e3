// Package rotor computes optimal activation-checkpointing (rematerialization) schedules for
// a heterogeneous chain under a memory budget.
//
// Source: A. Shilova, Memory Saving Strategies for Deep Neural Network Training, PhD thesis,
// Université de Bordeaux, 2021, chapter 2 (the algorithm of the rotor tool); the
// implementable specification is shared/specs/rotor.md, cited as "spec §x.y" below.
//
// Three dynamic programs are provided, all on the model of spec §2 (operations F_all, F_ck,
// F_none and B; the loss is stage L+1; sizes discretized into memory units):
//
//   - Solve: the memory-persistent DP C_MP of Theorem 6 (Algorithms 3-4), in the thesis
//     form (spec §9 explains how the public rotor code differs). O(S·L³) time,
//     one table of S·(L+1)(L+2)/2 values and one of choices.
//   - Solve with Options.Revolve: the same DP with the F_all branch allowed only right
//     before its backward, the "revolve" baseline of spec §4.2.
//   - SolveFloating: the exact floating DP C_FL of Theorem 5 with the fixes of spec §3.4.
//     O(S·L⁶): for short chains only.
//
// Budgets are totals in bytes, the chain input a_0 included; the DP works on
// budget − a_0 (spec E3).
package rotor
