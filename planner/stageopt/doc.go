// Package stageopt computes the operation-level options of one chain stage: which values of
// its forward the first forward keeps, and what recomputing the rest right before the
// stage's backward costs (issue 19; docs/rotor.md, "Operation-level options").
//
// A stage is a graph of operations (its captured ATen graph), each with a time, and the
// tensors autograd saves for its backward: views of some operations' values, or tensors
// an operation saves that are no operation's value (a LayerNorm's statistics, an attention
// kernel's log-sum-exp). Keeping an operation keeps its value, when a saved tensor views
// it, and its own saved tensors. Given the kept set K, what the backward reads and K does
// not hold must be recomputed from the stage's input (kept to the backward), the model's
// parameters and side values (always in memory) and K: the recomputation runs every
// operation that produces a needed value, every operation whose own saved tensors were
// dropped, and, recursively, what they read. This is Checkmate's rematerialization problem
// (Jain et al., MLSys 2020) for a single recomputation, as Rockmate uses it inside blocks
// (Zhao et al., ICML 2023).
//
// Options returns a small Pareto set: keep nothing (only the input), the optimum at a few
// memory budgets between, each by an exact ILP on HiGHS (package milp) when the stage has
// at most MaxILPNodes operations, else by a greedy that adds, one at a time, the operation
// that saves the most recomputation time per byte; keeping everything is the stage's own
// ā, option 0, and is not listed. Evaluate gives the exact cost of any kept set; the tests
// compare the ILP with the brute force over every set on small stages.
package stageopt
