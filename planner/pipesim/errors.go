package pipesim

import (
	"fmt"

	"github.com/chainplan/chainplan"
)

// OptionError reports a bad simulation request; Field names the option (schedule,
// microbatches, minibatches, stages, max_inflight, flush, plan, checkpoint, alpha, ...).
// It wraps chainplan.ErrUnsupported, so the CLI exits with status 2.
type OptionError struct {
	Field string
	Msg   string
}

func (e *OptionError) Error() string { return fmt.Sprintf("pipesim: %s: %s", e.Field, e.Msg) }

// Unwrap makes errors.Is(err, chainplan.ErrUnsupported) true.
func (e *OptionError) Unwrap() error { return chainplan.ErrUnsupported }

func optionErr(field, format string, args ...any) error {
	return &OptionError{Field: field, Msg: fmt.Sprintf(format, args...)}
}
