package baseline

import (
	"errors"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/testchains"
)

// TestSequentialLongChain: the search over every segment count replays about 3L²
// operations, and on the 40 000-stage chain of issue 33 is refused at once with a
// *chainplan.SizeError that gives a segment count to use, without allocating; with that
// count the plan is made in time and memory linear in the chain. The search used to keep
// every count's sequence, O(L²) memory: a 5000-stage chain crashed under 4 GB.
func TestSequentialLongChain(t *testing.T) {
	c := testchains.Long(testchains.LongStages)
	for name, f := range map[string]func() error{
		"Sequential":          func() error { _, err := Sequential(c, 64<<30, 0); return err },
		"SequentialMinBudget": func() error { _, err := SequentialMinBudget(c, 0); return err },
		"SequentialMin":       func() error { _, err := SequentialMin(c, 0); return err },
	} {
		var err error
		n := testchains.Allocated(func() { err = f() })
		var se *chainplan.SizeError
		if !errors.As(err, &se) || !errors.Is(err, chainplan.ErrUnsupported) {
			t.Fatalf("%s: %v, want a *chainplan.SizeError", name, err)
		}
		for _, want := range []string{"sequential: a chain of 40000 stages is too large", "over sequential's limit of 1e+08",
			"--segments 200"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %q does not say %q", name, err, want)
			}
		}
		if n > testchains.MaxAllocBytes {
			t.Errorf("%s: allocated %d bytes before refusing", name, n)
		}
	}
	var p *chainplan.Plan
	var err error
	n := testchains.Allocated(func() { p, err = SequentialMin(c, 200) })
	if err != nil || p.Segments != 200 || len(p.Sequence) < 2*testchains.LongStages {
		t.Fatalf("SequentialMin(200 segments): %v", err)
	}
	if n > testchains.MaxAllocBytes {
		t.Errorf("200 segments: allocated %d bytes", n)
	}
}
