package chainplan

import (
	"errors"
	"fmt"
)

// Sentinel errors. Callers test for them with errors.Is.
var (
	// ErrInvalidChain reports a chain that breaks the chain contract (see ChainError).
	ErrInvalidChain = errors.New("chainplan: invalid chain")
	// ErrInfeasible reports that no schedule fits the memory budget (see InfeasibleError).
	ErrInfeasible = errors.New("chainplan: infeasible budget")
	// ErrInvalidPlan reports a plan file or sequence that cannot be read.
	ErrInvalidPlan = errors.New("chainplan: invalid plan")
	// ErrUnsupported reports a request a planner refuses, such as a chain too long for an
	// exponential algorithm.
	ErrUnsupported = errors.New("chainplan: unsupported request")
	// ErrNotFound reports a missing stored object (a run or a plan).
	ErrNotFound = errors.New("chainplan: not found")
	// ErrSchemaVersion reports a file or database of a format version this build cannot read.
	ErrSchemaVersion = errors.New("chainplan: unsupported format version")
)

// InfeasibleError reports a budget below what the algorithm needs, with the smallest
// budget that works (MinBudgetBytes, 0 when no budget works at all).
type InfeasibleError struct {
	Algo           string
	BudgetBytes    int64
	MinBudgetBytes int64
	Slots          int64
}

func (e *InfeasibleError) Error() string {
	if e.MinBudgetBytes <= 0 {
		return fmt.Sprintf("%s: no schedule fits a budget of %s, and no budget makes this chain feasible",
			e.Algo, FormatBytes(e.BudgetBytes))
	}
	slots := ""
	if e.Slots > 0 {
		slots = fmt.Sprintf(" at %d slots", e.Slots)
	}
	return fmt.Sprintf("%s: budget %s is too small; the smallest feasible budget%s is %s",
		e.Algo, bytesAndUnit(e.BudgetBytes), slots, bytesAndUnit(e.MinBudgetBytes))
}

// Hint tells the user what to do.
func (e *InfeasibleError) Hint() string {
	if e.MinBudgetBytes <= 0 {
		return ""
	}
	return fmt.Sprintf("raise --budget to at least %d", e.MinBudgetBytes)
}

// Unwrap makes errors.Is(err, ErrInfeasible) true.
func (e *InfeasibleError) Unwrap() error { return ErrInfeasible }

// SmallestFeasibleBytes is MinBudgetBytes (Infeasibility).
func (e *InfeasibleError) SmallestFeasibleBytes() int64 { return max(e.MinBudgetBytes, 0) }

// Infeasibility is what a family's infeasibility error tells beyond its message (each
// family has one: *InfeasibleError for the checkpointing and offloading budgets,
// *pipeplan.InfeasibleError for the pipelines' memory per device,
// *service.NoCandidateError for the parallel strategies): the smallest memory, in the
// request's terms (a budget, a memory per device), at which a plan fits, 0 when that is not
// known or none does. errors.Is(err, ErrInfeasible) holds for every one, so the CLI exits
// 3; the bindings read the smallest memory through this interface with errors.As.
type Infeasibility interface {
	error
	SmallestFeasibleBytes() int64
}

// OptionError reports a bad option of a planner's request: Planner names the request
// (advise, search3d), Field the request field as its JSON form and the CLI spell it.
// errors.Is(err, ErrUnsupported) holds.
type OptionError struct {
	Planner string
	Field   string
	Msg     string
}

func (e *OptionError) Error() string { return fmt.Sprintf("%s: %s: %s", e.Planner, e.Field, e.Msg) }

// Unwrap makes errors.Is(err, ErrUnsupported) true.
func (e *OptionError) Unwrap() error { return ErrUnsupported }
