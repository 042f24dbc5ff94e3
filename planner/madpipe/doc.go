// Package madpipe plans pipelined model parallelism with MadPipe: a partition of a chain
// over P devices that may give one device several stages, and a 1-periodic schedule that
// fits every device's memory.
//
// Source: O. Beaumont, L. Eyraud-Dubois, A. Shilova, "MadPipe: Memory Aware Dynamic
// Programming Algorithm for Pipelined Model Parallelism" (2020), and A. Shilova's PhD
// thesis (2021), chapters 6-7; the implementable specification is shared/specs/madpipe.md,
// cited as "spec §x" below. The model is planner/pipeline's.
//
// Solve runs the two phases of the paper and the best contiguous plan beside them:
//
//   - Phase 1 (spec §2): MadPipe-DP, a dynamic program over the chain from its end with
//     P−1 normal devices (one stage each) and one special device (any number of stages,
//     its memory deliberately under-estimated with g−1 stored activations), its state
//     discretized on the paper's grids (t_P 101 values, m_P 11, V 51, rounded up), inside
//     Algorithm 1's ten-step search on the target period T̂. It yields allocations with a
//     predicted period (the plan's predicted_period).
//   - Phase 2 (spec §3.3): the scheduling ILP of chapter 6 on the chain of stages with the
//     allocation fixed, solved by a MILP solver (planner/milp: the HiGHS program) within a
//     time limit (Options.TimeLimit, 10 s by default; the paper used 60 s). The solver
//     fixes the order of the operations on each resource and the shifts; the period and
//     start times are then computed exactly from them (timing.go), and the plan is
//     checked by pipeline's validator. When the best allocation's ILP finds no schedule,
//     the next allocations of phase 1 are tried, best prediction first, while time is left.
//   - The optimal contiguous plan (planner/contiguous). MadPipe returns whichever of its
//     own plan and this one has the smaller period, and says which in Plan.Chosen
//     ("madpipe" or "contiguous"): it never does worse than the best contiguous plan.
//     Without a MILP solver it returns the contiguous plan and says how to install one.
//
// Choices where the sources are silent (spec §9): the grids round up and V keeps its step
// past the top of its grid; phase 2 keeps phase 1's allocation (the reading spec §3.3
// recommends, and what keeps the ILP small); memory is checked in the validator's
// time-resolved model for every algorithm (no transient terms), so that MadPipe and
// 1F1B* plans meet one definition of "fits"; an ILP without a schedule falls back to the
// next allocation, then to the contiguous plan.
package madpipe
