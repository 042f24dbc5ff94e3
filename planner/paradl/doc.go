// Package paradl ranks parallel training strategies for a profiled model on a described
// cluster with ParaDL's analytical model: per-epoch computation, communication and memory
// per device of serial, data, spatial, layer, pipeline, filter, channel, data+filter and
// data+spatial parallelism, with each strategy's limits on the device count.
//
// Source: A. N. Kahira et al., "An Oracle for Guiding Large-Scale Model/Hybrid Parallel
// Training of Convolutional Neural Networks", HPDC 2021; the implementable specification
// is shared/specs/paradl_amp_timeprest.md, cited as "spec §x" below: §2.4 (collectives),
// §2.5 (per-strategy model), §2.6 (limits), §2.7 (γ calibration), §2.9 (the authors'
// script: collectives at partitioned layers only, ceilings), §2.10e (warnings), §5.2 (the
// advise feature).
//
// Advise evaluates every (strategy, device count, factorisation) the options admit and
// returns them ranked by the goal (time, cost = devices × time, or memory). On top of the
// paper it adds what §5.2 asks for:
//
//   - α and β per communicator from the cluster description (planner/cluster): the span of
//     the group (inside a node, a leaf, a rack) picks the level, and contention divides
//     the bandwidth of disjoint groups sharing a network interface (φ);
//   - optimizer state in memory (the paper omits it, trap §2.12-11);
//   - γ calibrated from the profile: the measured store-all peak of the chain (activations)
//     plus weights and gradients, over the paper's naive sum, at the profiled batch;
//   - "data + checkpointing": when a data-parallel candidate does not fit, rotor plans the
//     per-device chain within the memory left after weights, gradients and optimizer state
//     and its recomputation is charged to the computation time; likewise pofo for
//     "data + offloading" when the cluster gives a host bandwidth.
//
// Conventions (spec §2.9-2 and the golden logs): an epoch is I = ⌈D/B⌉ iterations, each
// paying its collectives; computation counts the samples a device really processes
// (⌈D/p⌉ for data parallelism). Times are per epoch; IterationTimeS divides by I.
// Per-sample times are taken at the batch a device runs (B/p for data parallelism, B/S
// for a pipeline segment), interpolated between profiled batch sizes (trap §2.12-3).
//
// Deviation: the filter and channel formulas divide only the partitioned layers'
// (convolutions and linear layers) computation by p and count their collectives only
// (§2.9-1), rather than Table 3's "every layer"; with every layer partitioned (the toy
// model of §2.11 C) the two agree.
package paradl
