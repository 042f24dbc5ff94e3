// Package chainplan holds the data model shared by every part of chainplan: the chain of
// stages a model is profiled into (Chain, Stage, Loss), the operations a schedule is made of
// (Op, OpKind), the plan a planner returns (Plan), byte-size parsing, and the errors that
// cross package boundaries.
//
// It depends on the standard library alone, so the planners, the profile store, the CLI and
// the Python bindings can all import it without cycles or cgo.
//
// Units: times are float64 in whatever unit the profile used (the profiler writes seconds;
// the planners only add times). Sizes are int64 bytes. A chain has stages 1..L; the loss is
// stage L+1, and the chain input is a_0 (InputBytes).
package chainplan
