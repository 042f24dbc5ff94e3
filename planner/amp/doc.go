// Package amp searches 3-D parallel training strategies — pipeline, data and tensor
// degrees, micro-batch size, device placement and the layer-to-stage cut — for a profiled
// model on a heterogeneous cluster, AMP's way, with the memory model AMP lacks.
//
// Source: D. Li, H. Wang, E. Xing, H. Zhang, "AMP: Automatically Finding Model Parallel
// Strategies with Heterogeneity Awareness" (NeurIPS 2022); the implementable specification
// is shared/specs/paradl_amp_timeprest.md, cited as "spec §x" below: §3.3 (the strategy
// space), §3.4 (the cost model, Eqs. 3-5), §3.5 and Appendix A.1 (the exact layer
// assignment DP, Eqs. 6-8), §3.6 (the search, Algorithm 1, and Megatron's heuristic),
// §3.7 (the authors' code), §5.3 (search3d).
//
// Search enumerates tmp ∈ divisors(devices per node), dp ∈ divisors(N/tmp), pp = N/(tmp·dp)
// ≤ L and mbs ∈ divisors(gbs/dp) (gas = gbs/(dp·mbs)), places ranks in Megatron's order
// (tmp fastest, then dp, then pp, filling nodes in order; also the reverse order on a
// heterogeneous cluster), assigns blocks to stages with the exact DP (partition.go), prices
// each candidate with Eq. 4 and ranks them. Differences from AMP, each from spec §5.3:
//
//   - a stage's time uses the slowest device type among its devices (a relative speed
//     per type, Options.DeviceSpeed), not an average over types; a boundary's transfer
//     and a group's all-reduce use the slowest link among the pairs involved, and the
//     straggler over data-parallel replicas (max, not AMP's code's average);
//   - tensor parallelism is modelled (Megatron's rule, §3.10-4): a block with parameters
//     runs 1/tmp of its computation plus four all-reduces of its output per micro-batch
//     within the tensor group;
//   - the memory filter: per stage, weights and gradients (/tmp), the optimizer state and
//     the activations of the micro-batches in flight (1F1B: min(pp − i + 1, gas), GPipe:
//     gas) against the smallest device memory of the stage; a stage over capacity is
//     dropped, or checkpointed with rotor within the memory left and charged the
//     recomputation (Options.MemoryCheck);
//   - MadPipe's contiguous partitioner (planner/contiguous), which is memory-aware, as an
//     alternative cut priced by the same model (Options.Cut).
//
// The DP is exact for Eq. 4 with per-stage device speeds (partition.go; brute-force equal on
// thousands of random cases). Its cost, O(|M|·k·L²) over the candidate bottlenecks M,
// drops sharply with its pruning; models of hundreds of layers are coarsened
// to Options.Blocks blocks first (trap §3.10-9).
package amp
