package pipedream

import (
	"errors"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/internal/testchains"
	"github.com/chainplan/chainplan/planner/pipeline"
)

// TestLimits: the 40 000-stage chain of issue 33 is refused by Solve and MinMemory at once;
// a chain whose smallest-memory search would list more of the estimate's values than the
// limit holds is refused before they are listed; and a search that would run more DP
// steps than maxSteps is refused, naming the steps.
func TestLimits(t *testing.T) {
	refused := func(name string, err error, n uint64, want ...string) {
		t.Helper()
		var se *chainplan.SizeError
		if !errors.As(err, &se) || !errors.Is(err, chainplan.ErrUnsupported) || n > testchains.MaxAllocBytes {
			t.Fatalf("%s: %v after %d bytes, want a *chainplan.SizeError at once", name, err, n)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", name, err, w)
			}
		}
	}
	opts := pipeplan.Options{GPUs: 8, MemoryBytes: 16e9, Bandwidth: 12e9}
	pr, err := pipeline.NewProblem(testchains.Long(testchains.LongStages), opts)
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	n = testchains.Allocated(func() { _, err = Solve(pr, Options{}) })
	refused("Solve", err, n, "a chain of 40000 stages is too large")
	n = testchains.Allocated(func() { _, err = MinMemory(pr, Options{}) })
	refused("MinMemory", err, n, "a chain of 40000 stages is too large")

	t.Setenv(chainplan.TableLimitEnv, "16MiB")
	pr, err = pipeline.NewProblem(testchains.Long(300), opts)
	if err != nil {
		t.Fatal(err)
	}
	n = testchains.Allocated(func() { _, err = MinMemory(pr, Options{}) })
	refused("MinMemory under 16 MiB", err, n, "pipedream: a chain of 300 stages is too large",
		"the smallest-memory search's list of the estimate's values (up to 3.61e+05)", "over the limit of 16.00 MiB",
		"--algo contiguous")
	refused("a walk of 3·10⁹ steps", spend(pr, 3e9, "give the memory"), 0,
		"the smallest-memory search on 8 devices would take more than 3e+09 steps, over pipedream's limit of 2e+09")
}
