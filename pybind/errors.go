package pybind

import (
	"errors"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/chainplan/chainplan"
)

// codedError prefixes err's message with its stable code (see the package comment).
func codedError(err error) error {
	if err == nil {
		return nil
	}
	msg := strings.TrimPrefix(err.Error(), "chainplan: ")
	var ie *chainplan.InfeasibleError
	switch {
	case errors.As(err, &ie):
		return fmt.Errorf("chainplan[infeasible;min_budget_bytes=%d]: %s", ie.MinBudgetBytes, msg)
	case errors.Is(err, chainplan.ErrInfeasible):
		return fmt.Errorf("chainplan[infeasible;min_budget_bytes=0]: %s", msg)
	case errors.Is(err, chainplan.ErrInvalidChain):
		return fmt.Errorf("chainplan[invalid-chain]: %s", msg)
	case errors.Is(err, errInvalidProfile):
		return fmt.Errorf("chainplan[invalid-profile]: %s", msg)
	case errors.Is(err, chainplan.ErrInvalidPlan):
		return fmt.Errorf("chainplan[invalid-plan]: %s", msg)
	case errors.Is(err, chainplan.ErrUnsupported), errors.Is(err, errBadRequest):
		return fmt.Errorf("chainplan[bad-request]: %s", msg)
	case errors.Is(err, chainplan.ErrNotFound):
		return fmt.Errorf("chainplan[not-found]: %s", msg)
	}
	return fmt.Errorf("chainplan[internal]: %s", msg)
}

var errBadRequest = errors.New("bad request")

// recoverError turns a panic into an internal error, so that a bug in Go raises a Python
// exception instead of ending the interpreter. Use it as `defer recoverError(&err)`.
func recoverError(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("chainplan[internal]: panic: %v\n%s", r, debug.Stack())
	}
}
