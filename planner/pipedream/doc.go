// Package pipedream is the PipeDream baseline of the MadPipe comparisons: PipeDream's
// partitioning dynamic program with its own memory estimate, then the partition scheduled
// by 1F1B* at the smallest period that fits the memory, "PipeDream (DP+1F1B*)" of spec
// §4.2.
//
// Source: the public PipeDream planner (msr-fiddle/pipedream,
// optimizer/optimizer_graph_hierarchical.py, compute_partitioning, straight pipelines
// without stage replication) as shared/specs/madpipe.md §4.5 reads it [EXTERNAL], on the
// model of planner/pipeline. The DP minimizes the largest stage load over contiguous
// partitions into at most P stages:
//
//	A[j][1] = max(U(1,j), C(j))
//	A[j][m] = min_{k<j} max(A[k][m−1], U(k+1,j), C(k), C(j))   subject to est(k+1, j, m) ≤ M
//	A[j][m] = min(A[j][m], A[j][m−1])                           (--use_fewer_machines)
//
// Deviations, as the spec recommends: the transfer terms C(k) = 2a_k/β and C(j) always
// enter the max (the public code adds them only with --activation_compression_ratio, an
// indentation quirk), and the memory estimate est of the m-th stage from the input is one
// of (Options.Estimate):
//
//   - EstimateCode (default), the public code's: (P − m)·(ACT + PAR), ACT the sum of the
//     stage's output activation sizes, PAR one copy of its weights; the last of P stages
//     is not constrained at all. It ignores the model's weight copies, buffers and
//     activation model: PipeDream's own rough estimate (spec §4.1).
//   - Estimate1F1B, the spec's variant closer to 1F1B: the model's StageMemory with
//     P − m + 1 stored mini-batches, i.e. PipeDream's assumption that a stage never holds
//     more than P activations, which the communication pseudo-stages of 1F1B* break
//     (spec §7 item 5).
//
// Solve then asks pipeline.BestPeriod for the partition's smallest period under the real
// memory model and refuses when even one group per stage does not fit: PipeDream's
// partition, not the memory, is then the problem.
package pipedream
