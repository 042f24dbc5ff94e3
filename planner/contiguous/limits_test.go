package contiguous_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/contiguous"
	"github.com/chainplan/chainplan/planner/internal/testchains"
)

// TestLongChainRefused: on the 40 000-stage chain of issue 33, 8 devices, Solve and
// MinMemory refuse at once (pipeline.Problem.CheckPlanning) with a *chainplan.SizeError
// naming the chain's length and the limit, where each run of their DPs took minutes.
func TestLongChainRefused(t *testing.T) {
	pr := mustProblem(t, testchains.Long(testchains.LongStages), pipeplan.Options{GPUs: 8, MemoryBytes: 16e9, Bandwidth: 12e9})
	for name, f := range map[string]func() error{
		"Solve":     func() error { _, err := contiguous.Solve(pr); return err },
		"MinMemory": func() error { _, err := contiguous.MinMemory(pr); return err },
	} {
		var err error
		n := testchains.Allocated(func() { err = f() })
		var se *chainplan.SizeError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), "a chain of 40000 stages is too large") ||
			!strings.Contains(err.Error(), "over pipeline's limit") || n > testchains.MaxAllocBytes {
			t.Errorf("%s: %v after %d bytes, want a *chainplan.SizeError at once", name, err, n)
		}
	}
}
