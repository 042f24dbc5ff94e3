// Package pipeplan is the contract of the pipeline family between its planners and its
// front ends: the request (Request, with the platform and memory-model Options and their
// one set of defaults, and its JSON form), the chainplan.pipeline/v1 plan document (Plan,
// Stage, Op, Recompute), its strict reader (Parse, ReadPlan, IsPipelinePlan: errors are
// *PlanError naming the field) and writer (Plan.MarshalIndent), and the family's errors
// (*OptionError naming the option, *InfeasibleError with the smallest memory per device
// that fits or a lower bound). The CLI, the service, the bindings and the pictures import
// it instead of a planner; the model, the validator and the schedulers are
// planner/pipeline's, which reads these types under the same names (docs/pipeline.md,
// "The request" and "Plan document").
//
// It imports the root package only.
package pipeplan
