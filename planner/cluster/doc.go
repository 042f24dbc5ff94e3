// Package cluster is the description of a training cluster that the parallel planners
// (advise, search3d) plan for, and the communication model they share.
//
// Source: shared/specs/paradl_amp_timeprest.md, cited as "spec §x" below: the cluster
// description of §5.1, the Hockney α–β cost of ParaDL (§2.4) and AMP's bandwidth rules
// (§3.4, §3.7 item 3), which §6.1 shows to be one model.
//
// A cluster is a list of nodes, each holding Devices identical devices (GPUs) with their
// memory; devices are numbered 0..N−1 in node order, node by node. Two devices talk over
// one of these links, the first that applies:
//
//   - the bandwidth matrix, when the file gives one (AMP's general form, 003:L62);
//   - inside one node: the node's intra-node bandwidth and the intra-node latency;
//   - across nodes: the smallest hierarchy level (a leaf switch, a rack: Levels) whose
//     block of nodes holds both, with that level's latency and bandwidth, capped by
//     min(inter[a], inter[b]) of the two nodes' network interfaces (AMP's rule, the
//     default), or the inter-node latency and that minimum when no level holds both.
//
// A group of devices (a collective's communicator) gets the slowest of its pairs: the
// lowest bandwidth (AMP: "the lowest bandwidth B' in the group", 003:L123) and the highest
// latency. Contention (ParaDL's φ, 001:L477) divides a group's bandwidth by the number of
// flows sharing one network interface when several disjoint groups cross nodes at once.
//
// Units: bandwidths are bytes per second, latencies seconds, memory bytes. Files may give
// bandwidths in gigabits per second (fields ending in _gbps, as in the spec's example) or
// as strings with a unit ("12.5GB/s"), and memory as bytes or a size ("16GiB").
//
// Parse reads the file (YAML or JSON: JSON is YAML); every error is a *FieldError naming
// the field ("nodes[2].gpu_mem: ..."), and wraps chainplan.ErrUnsupported so that the
// front ends report it as bad input (exit status 2).
package cluster
