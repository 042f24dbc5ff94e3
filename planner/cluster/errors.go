package cluster

import (
	"fmt"

	"github.com/chainplan/chainplan"
)

// FieldError is a refused cluster description: Field is the path of the field at fault
// as the file spells it ("nodes[2].gpu_mem", "levels[0].nodes"), Line its line in the
// file (0 when unknown, for a value built in code).
type FieldError struct {
	Field string
	Line  int
	Msg   string
}

func (e *FieldError) Error() string {
	where := e.Field
	if where == "" {
		where = "cluster"
	}
	if e.Line > 0 {
		return fmt.Sprintf("cluster description: line %d: %s: %s", e.Line, where, e.Msg)
	}
	return fmt.Sprintf("cluster description: %s: %s", where, e.Msg)
}

// Unwrap makes errors.Is(err, chainplan.ErrUnsupported) true: a bad cluster is bad input.
func (e *FieldError) Unwrap() error { return chainplan.ErrUnsupported }

func fieldErr(field string, line int, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Line: line, Msg: fmt.Sprintf(format, args...)}
}
