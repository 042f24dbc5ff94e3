package madpipe

import (
	"math"
	"testing"

	"github.com/chainplan/chainplan/planner/pipeline"
)

// TestAnchorE1: costs (1, 2, 1) on P = 2 (anchor A1): the best contiguous period is 3;
// MadPipe's non-contiguous schedule reaches the non-contiguous optimum 2.
func TestAnchorE1(t *testing.T) {
	prob := mustProblem(t, chainOf([]float64{1, 2, 1}, 0, nil, nil), pipeline.Options{GPUs: 2, MemoryBytes: ample, Bandwidth: 1})
	tr := &Trace{}
	p, err := Solve(prob, Options{Trace: tr})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", tr)
	if p.Chosen != ChosenMadPipe || math.Abs(p.Period-2) > 1e-9 {
		t.Fatalf("period %g chosen %q, want 2 from madpipe", p.Period, p.Chosen)
	}
	if err := pipeline.Check(prob, p); err != nil {
		t.Fatal(err)
	}
}
