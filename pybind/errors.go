package pybind

import (
	"errors"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/service"
	"github.com/chainplan/chainplan/planner/milp"
	"github.com/chainplan/chainplan/store"
)

// codedError prefixes err's message with its stable code (see the package comment).
func codedError(err error) error {
	if err == nil {
		return nil
	}
	msg := strings.TrimPrefix(err.Error(), "chainplan: ")
	var ie chainplan.Infeasibility
	switch {
	case errors.As(err, &ie):
		return fmt.Errorf("chainplan[infeasible;min_budget_bytes=%d]: %s", ie.SmallestFeasibleBytes(), msg)
	case errors.Is(err, chainplan.ErrInfeasible):
		return fmt.Errorf("chainplan[infeasible;min_budget_bytes=0]: %s", msg)
	case errors.Is(err, chainplan.ErrInvalidChain):
		return fmt.Errorf("chainplan[invalid-chain]: %s", msg)
	case errors.Is(err, errInvalidProfile):
		return fmt.Errorf("chainplan[invalid-profile]: %s", msg)
	case errors.Is(err, chainplan.ErrInvalidPlan):
		return fmt.Errorf("chainplan[invalid-plan]: %s", msg)
	case errors.Is(err, store.ErrBadQuery), errors.Is(err, store.ErrReadOnly):
		// Checked before bad-request: a query error is a bad request with its own class.
		return fmt.Errorf("chainplan[bad-query]: %s", msg)
	case errors.Is(err, chainplan.ErrUnsupported), errors.Is(err, errBadRequest), errors.Is(err, service.ErrBadInput),
		errors.Is(err, chainplan.ErrSchemaVersion), errors.Is(err, chainplan.ErrInputFile):
		return fmt.Errorf("chainplan[bad-request]: %s", msg)
	case errors.Is(err, chainplan.ErrNotFound):
		return fmt.Errorf("chainplan[not-found]: %s", msg)
	case errors.Is(err, milp.ErrNoSolver):
		return fmt.Errorf("chainplan[no-solver]: %s", msg)
	}
	return fmt.Errorf("chainplan[internal]: %s", msg)
}

var errBadRequest = errors.New("bad request")

// badRequest marks err as a bad request without adding to its message: the code
// "chainplan[bad-request]" already says so.
func badRequest(err error) error { return &requestError{err} }

type requestError struct{ err error }

func (e *requestError) Error() string   { return e.err.Error() }
func (e *requestError) Unwrap() []error { return []error{errBadRequest, e.err} }

// recoverError turns a panic into an internal error, so that a bug in Go raises a Python
// exception instead of ending the interpreter. Use it as `defer recoverError(&err)`.
func recoverError(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("chainplan[internal]: panic: %v\n%s", r, debug.Stack())
	}
}
