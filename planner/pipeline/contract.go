package pipeline

import "github.com/chainplan/chainplan/pipeplan"

// The plan document, the request and their errors are defined once, in the contract
// package pipeplan, which the front ends (CLI, service, bindings, pictures) import without
// the model. The planners read them here, beside the model, under the same names.

type (
	// Plan is pipeplan.Plan, the chainplan.pipeline/v1 document.
	Plan = pipeplan.Plan
	// Stage is pipeplan.Stage.
	Stage = pipeplan.Stage
	// Op is pipeplan.Op.
	Op = pipeplan.Op
	// OpKind is pipeplan.OpKind.
	OpKind = pipeplan.OpKind
	// Request is pipeplan.Request, the family's one request.
	Request = pipeplan.Request
	// Options is pipeplan.Options, the platform and the memory model.
	Options = pipeplan.Options
	// OptionError is pipeplan.OptionError.
	OptionError = pipeplan.OptionError
	// InfeasibleError is pipeplan.InfeasibleError, the family's one infeasibility error.
	InfeasibleError = pipeplan.InfeasibleError
	// PlanError is pipeplan.PlanError.
	PlanError = pipeplan.PlanError
)

// The constants of pipeplan, under the same names.
const (
	FallbackNoSolver = pipeplan.FallbackNoSolver
	F                = pipeplan.F
	B                = pipeplan.B
	CF               = pipeplan.CF
	CB               = pipeplan.CB
	ActivationsSaved = pipeplan.ActivationsSaved
	ActivationsInput = pipeplan.ActivationsInput
)

// IsContiguous is pipeplan.IsContiguous.
func IsContiguous(stages []Stage) bool { return pipeplan.IsContiguous(stages) }

// Crosses is pipeplan.Crosses.
func Crosses(stages []Stage, k int) bool { return pipeplan.Crosses(stages, k) }
