package pipesim

import (
	"fmt"

	"github.com/chainplan/chainplan"
)

// OptionError reports a bad simulation request: the shared chainplan.OptionError with
// Planner "pipesim"; Field names the option (schedule, microbatches, minibatches, stages,
// max_inflight, flush, plan, checkpoint, alpha, ...). It wraps chainplan.ErrUnsupported,
// so the CLI exits with status 2.
type OptionError = chainplan.OptionError

// planner is the name pipesim's option errors carry.
const planner = "pipesim"

func optionErr(field, format string, args ...any) error {
	return &OptionError{Planner: planner, Field: field, Msg: fmt.Sprintf(format, args...)}
}
