package pipeplan_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/pipeplan"
)

// TestInfeasibleErrorIsAnInfeasibility: the pipeline family's infeasibility tells its
// smallest memory per device through the interface every family shares, 0 when only a
// lower bound or nothing is known.
func TestInfeasibleErrorIsAnInfeasibility(t *testing.T) {
	for _, tt := range []struct {
		err  *pipeplan.InfeasibleError
		want int64
	}{
		{&pipeplan.InfeasibleError{Algo: "madpipe", MemoryBytes: 100, MinMemoryBytes: 300}, 300},
		{&pipeplan.InfeasibleError{Algo: "pipedream", MemoryBytes: 500, MinMemoryBytes: 300}, 300},
		{&pipeplan.InfeasibleError{Algo: "madpipe", MemoryBytes: 100, MinMemoryBytes: 300, LowerBound: true}, 0},
		{&pipeplan.InfeasibleError{Algo: "contiguous", MemoryBytes: 100}, 0},
	} {
		var inf chainplan.Infeasibility
		if !errors.As(error(tt.err), &inf) || inf.SmallestFeasibleBytes() != tt.want || !errors.Is(tt.err, chainplan.ErrInfeasible) {
			t.Errorf("%v: SmallestFeasibleBytes = %v, want %d", tt.err, inf, tt.want)
		}
	}
}

// TestOptionErrorIsTheSharedOne: a bad pipeline option, from the JSON form or from the
// options' check, is the one chainplan.OptionError every planner uses (so a front end's
// errors.As finds it whichever planner refused), its text the pipeline's "pipeline: FIELD:
// MSG" and errors.Is(err, ErrUnsupported) true.
func TestOptionErrorIsTheSharedOne(t *testing.T) {
	var r pipeplan.Request
	fromJSON := json.Unmarshal([]byte(`{"memory_bytes": "lots"}`), &r)
	_, fromOptions := pipeplan.Options{GPUs: 0}.WithDefaults()
	for _, tt := range []struct {
		err          error
		field, start string
	}{
		{fromJSON, "memory", "pipeline: memory: must be a number or a string such as \"16GiB\""},
		{fromOptions, "gpus", "pipeline: gpus: want 1..4096 devices (got 0)"},
	} {
		var oe *chainplan.OptionError
		if !errors.As(tt.err, &oe) || oe.Planner != "pipeline" || oe.Field != tt.field {
			t.Errorf("%v: want a *chainplan.OptionError of the pipeline on %s", tt.err, tt.field)
			continue
		}
		if !strings.HasPrefix(tt.err.Error(), tt.start) || !errors.Is(tt.err, chainplan.ErrUnsupported) {
			t.Errorf("error %q: want it to start %q and wrap ErrUnsupported", tt.err, tt.start)
		}
	}
}
