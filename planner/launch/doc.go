// Package launch defines what an advisor's candidate carries for chainplan.parallelize and
// the torchrun example (examples/parallel/train.py) to launch it: the mesh shape, the
// micro-batch and its count, the stage cuts over the chain's layers and each stage's
// checkpointing (issue 34, docs/formats.md "Launch fields of a parallel candidate").
//
// search3d (planner/amp) and advise (planner/paradl) carry a *Shape as their candidates'
// "launch" object, in their JSON output and in the stored advice
// (advice_candidates.detail_json, advice.result_json): what
// chainplan.launch.LaunchCandidate.from_search3d and from_dict read. A candidate that
// parallelize cannot launch (spatial parallelism, offloading, a micro-batch that is not
// a whole number of samples) carries none.
package launch
