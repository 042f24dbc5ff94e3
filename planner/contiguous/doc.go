// Package contiguous computes the optimal contiguous pipeline plan: the partition of a
// chain into at most P stages, one per device, and the 1-periodic pattern of smallest
// period whose memory fits every device.
//
// Source: shared/specs/madpipe.md (spec §x below) on the model of planner/pipeline. For a
// fixed contiguous allocation, 1F1B*(T) stores the fewest activations any 1-periodic
// pattern of period T can on every stage (Theorem 15, spec §1.7), and its memory never
// grows with T; so the best plan is 1F1B* on the allocation whose exact best period
// (pipeline.BestPeriod, spec §3.1) is smallest. Solve finds it with a feasibility DP for a
// fixed T (feasible.go) and a search over T that ends on that exact period. This is the
// contiguous part of MadPipe's class of allocations (spec §2.1), the baseline MadPipe
// never does worse than, and the "contiguous optimum" of the spec's tests (§4.6, §6.4).
//
// 1F1B* is optimal among 1-periodic patterns only (spec §7 item 20): a k-periodic pattern
// can beat it (Theorem 16).
package contiguous
