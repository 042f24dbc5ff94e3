package pipeline_test

import (
	"math"
	"slices"
	"testing"

	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/internal/pipechains"
	"github.com/chainplan/chainplan/planner/pipeline"
)

// MustProblem builds a problem or fails the test.
func MustProblem(tb testing.TB, uF, uB []float64, w, a []int64, opts pipeplan.Options) *pipeline.Problem {
	tb.Helper()
	pr, err := pipeline.NewProblem(pipechains.Chain(uF, uB, w, a), opts)
	if err != nil {
		tb.Fatal(err)
	}
	return pr
}

// oneEach puts layer k on device k−1: the partition of one-layer stages.
func oneEach(l int) []pipeplan.Stage {
	st := make([]pipeplan.Stage, l)
	for k := range st {
		st[k] = pipeplan.Stage{First: k + 1, Last: k + 1, GPU: k}
	}
	return st
}

// TestOneFOneBStarExample is anchor A6: the worked example of spec §1.7, four stages with
// (U_F, U_B) = (1,2), (1,1), (2,2), (1,1), no communication cost.
func TestOneFOneBStarExample(t *testing.T) {
	pr := MustProblem(t, []float64{1, 1, 2, 1}, []float64{2, 1, 2, 1}, nil, nil,
		pipeplan.Options{GPUs: 4, MemoryBytes: 1 << 40, Bandwidth: 1})
	p, err := pipeline.OneFOneBStar(pr, oneEach(4), 6)
	if err != nil {
		t.Fatal(err)
	}
	// spec §1.7, the table of (start, duration, paper shift).
	want := map[pipeplan.OpKind][4][3]float64{
		pipeplan.F: {{0, 1, 0}, {1, 1, 0}, {2, 2, 0}, {4, 1, 0}},
		pipeplan.B: {{3, 2, 1}, {2, 1, 1}, {0, 2, 1}, {5, 1, 0}},
	}
	for kind, rows := range want {
		for k, w := range rows {
			o := p.Pattern[p.Find(kind, k)]
			if got := [3]float64{o.Start, o.Duration, float64(o.Shift)}; got != w {
				t.Errorf("%s of stage %d = %v, want %v", kind, k, got, w)
			}
		}
	}
	rep := pipeline.Validate(pr, p)
	if !rep.Valid {
		t.Fatalf("invalid: %v", rep.Issues)
	}
	if got, want := rep.NCA, []int{2, 2, 1, 1}; !slices.Equal(got, want) {
		t.Errorf("NCA = %v, want %v", got, want)
	}
	// NCA at other periods (spec §1.7): 1F1B at T = 4, (3,3,2,1) at 5, all 1 from 11.
	for T, want := range map[float64][]int{4: {4, 3, 2, 1}, 5: {3, 3, 2, 1}, 11: {1, 1, 1, 1}, 20: {1, 1, 1, 1}} {
		p, err := pipeline.OneFOneBStar(pr, oneEach(4), T)
		if err != nil {
			t.Fatal(err)
		}
		if got := pipeline.Validate(pr, p).NCA; !slices.Equal(got, want) {
			t.Errorf("T = %g: NCA = %v, want %v", T, got, want)
		}
	}
	if _, err := pipeline.OneFOneBStar(pr, oneEach(4), 3.9); err == nil {
		t.Error("T = 3.9 below the load 4 of stage 3: want an error")
	}
	if _, err := pipeline.OneFOneBStar(pr, oneEach(4), math.NaN()); err == nil {
		t.Error("T = NaN: want an error")
	}
}
