package madpipe

import (
	"fmt"
	"math"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/pipeline"
)

// ample is a memory limit no test chain reaches.
const ample = int64(1) << 50

// chainOf builds a chain with layer costs split evenly between forward and backward,
// outputs a_1..a_L (a_0 = in), saved bytes equal to the output, and weights w.
func chainOf(costs []float64, in int64, outs, w []int64) *chainplan.Chain {
	c := &chainplan.Chain{Format: chainplan.ChainFormat, InputBytes: in}
	for l, u := range costs {
		s := chainplan.Stage{Name: fmt.Sprint("l", l+1), FwdTime: u / 2, BwdTime: u / 2}
		if outs != nil {
			s.OutBytes, s.SavedBytes = outs[l], outs[l]
		}
		if w != nil {
			s.ParamBytes = w[l]
		}
		c.Stages = append(c.Stages, s)
	}
	return c
}

func mustProblem(tb testing.TB, c *chainplan.Chain, o pipeplan.Options) *pipeline.Problem {
	tb.Helper()
	p, err := pipeline.NewProblem(c, o)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

func allocString(st []stage) string {
	s := ""
	for _, x := range st {
		kind := "N"
		if x.special {
			kind = "S"
		}
		if x.first == x.last {
			s += fmt.Sprintf("{%d}%s ", x.first, kind)
		} else {
			s += fmt.Sprintf("{%d-%d}%s ", x.first, x.last, kind)
		}
	}
	return s
}

// TestWorkedExamples checks spec §2.10 (anchor A7), in exact mode as the spec computed them.
func TestWorkedExamples(t *testing.T) {
	e2 := []float64{2, .2, 1, .2, 2, .2, 1, .2, 2, .2, 1}
	for _, c := range []struct {
		name  string
		chain *chainplan.Chain
		opts  pipeplan.Options
		want  float64
		alloc string // "" when the spec names no allocation
	}{
		// E1: costs (1, 2, 1) on P = 2, no memory or communication: the special device
		// takes layers 1 and 3, the best contiguous period being 3.
		{"E1", chainOf([]float64{1, 2, 1}, 0, nil, nil), pipeplan.Options{GPUs: 2, MemoryBytes: ample, Bandwidth: 1, NoTemporaries: true}, 2, "{1}S {2}N {3}S "},
		// E2: the Theorem 17 chain for k = 2 on P = 5: 2.2 (contiguous 3.2, non-contiguous 2).
		{"E2", chainOf(e2, 0, nil, nil), pipeplan.Options{GPUs: 5, MemoryBytes: ample, Bandwidth: 1, NoTemporaries: true}, 2.2, ""},
		// E3: L = 4, unit times and activations, M = 5, β → ∞: 4 with {1,2} on the special
		// device charged 1·(a0+a1) + 2a2 = 4 ≤ 5 (the under-estimate of spec §2.5).
		{"E3", chainOf([]float64{2, 2, 2, 2}, 1, []int64{1, 1, 1, 1}, nil),
			pipeplan.Options{GPUs: 2, MemoryBytes: 5, Bandwidth: 1e30, ActivationModel: pipeplan.ActivationsInput, NoTemporaries: true}, 4, "{1-2}S {3-4}N "},
	} {
		t.Run(c.name, func(t *testing.T) {
			its, err := phase1(mustProblem(t, c.chain, c.opts), true)
			if err != nil || len(its) == 0 {
				t.Fatal("no allocation")
			}
			best := its[0]
			if got := best.estimate(); math.Abs(got-c.want) > 1e-9 {
				t.Errorf("phase 1 = %g (%s), want %g", got, allocString(best.stages), c.want)
			}
			if c.alloc != "" && allocString(best.stages) != c.alloc {
				t.Errorf("allocation %q, want %q", allocString(best.stages), c.alloc)
			}
		})
	}
}

// TestE2Restricted: the 2.2 of E2 is the optimum over all "1 special + 4 normal"
// allocations, which the exact DP at T̂ large enough (no memory) must find directly.
func TestE2Restricted(t *testing.T) {
	prob := mustProblem(t, chainOf([]float64{2, .2, 1, .2, 2, .2, 1, .2, 2, .2, 1}, 0, nil, nil),
		pipeplan.Options{GPUs: 5, MemoryBytes: ample, Bandwidth: 1, NoTemporaries: true})
	got, st := newDP(prob, 100, true).run()
	if math.Abs(got-2.2) > 1e-9 {
		t.Fatalf("DP = %g (%s), want 2.2", got, allocString(st))
	}
}

func TestOplus(t *testing.T) {
	d := &dp{that: 2}
	if got := d.oplus(0, 1.5); got != 1.5 {
		t.Errorf("0 ⊕ 1.5 = %g, want 1.5", got)
	}
	if got := d.oplus(1, 1); got != 2 {
		t.Errorf("1 ⊕ 1 = %g, want 2 (fits the group)", got)
	}
	if got := d.oplus(1.5, 1); got != 3 {
		t.Errorf("1.5 ⊕ 1 = %g, want 3 (group closed at 2)", got)
	}
	// A sum that should equal a group boundary up to rounding stays in its group.
	if got := d.oplus(0.1+0.2, 2-0.3); math.Abs(got-2) > 1e-12 {
		t.Errorf("0.3 ⊕ 1.7 = %g, want 2", got)
	}
}

func TestGridSnapsUp(t *testing.T) {
	g := newGrid(10, 10)
	for _, c := range []struct {
		x, want float64
		idx     int
	}{{0, 0, 0}, {0.5, 1, 1}, {1, 1, 1}, {1 + 1e-12, 1, 1}, {1.01, 2, 2}, {12.3, 13, 13}} {
		if v, i := g.snap(c.x); v != c.want || i != c.idx {
			t.Errorf("snap(%g) = %g, %d; want %g, %d", c.x, v, i, c.want, c.idx)
		}
	}
	if v, i := newGrid(10, 0).snap(3.3); v != 3.3 || i != -1 {
		t.Errorf("exact grid snap(3.3) = %g, %d", v, i)
	}
}
