package simulate_test

import (
	"math/rand/v2"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/testchains"
	"github.com/chainplan/chainplan/planner/simulate"
)

// TestTraceSmall checks every step of store-all on uniform(): unit forward times, backward
// times 2 (the loss 1), a = 1, ā = 2, a_0 = 1.
func TestTraceSmall(t *testing.T) {
	c := uniform()
	steps, rep := simulate.Trace(c, chainplan.StoreAllSequence(4))
	if !rep.Valid {
		t.Fatal(rep.Err())
	}
	type want struct {
		start, end            float64
		before, during, after int64
	}
	// Forwards store ā = 2 each (the loss stores nothing, and its backward creates δ_4 = 1);
	// the backward of stage ℓ < 5 needs δ_{ℓ-1} = 1 on top, then frees ā_ℓ while δ_{ℓ-1}
	// replaces δ_ℓ; B 1 also frees a_0, leaving δ_0.
	wants := []want{
		{0, 1, 1, 3, 3}, {1, 2, 3, 5, 5}, {2, 3, 5, 7, 7}, {3, 4, 7, 9, 9}, {4, 5, 9, 9, 9},
		{5, 6, 9, 10, 10}, {6, 8, 10, 11, 8}, {8, 10, 8, 9, 6}, {10, 12, 6, 7, 4}, {12, 14, 4, 5, 1},
	}
	if len(steps) != len(wants) {
		t.Fatalf("got %d steps, want %d", len(steps), len(wants))
	}
	for i, w := range wants {
		s := steps[i]
		got := want{s.Start, s.End, s.Before, s.During, s.After}
		if got != w || s.Index != i {
			t.Errorf("step %d (%s): got %+v, want %+v", i, s.Op, got, w)
		}
	}
}

// TestTraceAgreesWithReplay checks on random chains and checkpoint_sequential-like
// sequences that the steps tile the replay: each starts where the previous one ended, in
// time and memory, the largest need is the replay's peak and the last end its makespan.
func TestTraceAgreesWithReplay(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 1))
	for trial := range 50 {
		l := 1 + rng.IntN(12)
		c := testchains.Random(rng, l, testchains.RandomOptions{})
		seq := chainplan.StoreAllSequence(l)
		steps, rep := simulate.Trace(c, seq)
		full := simulate.Replay(c, seq, -1)
		if !rep.Valid || rep.Peak != full.Peak || rep.Makespan != full.Makespan {
			t.Fatalf("trial %d: trace report %+v differs from the replay %+v", trial, rep, full)
		}
		var peak int64
		for i, s := range steps {
			if i > 0 && (s.Start != steps[i-1].End || s.Before != steps[i-1].After) {
				t.Fatalf("trial %d: step %d starts at (%g, %d), the previous ended at (%g, %d)",
					trial, i, s.Start, s.Before, steps[i-1].End, steps[i-1].After)
			}
			if s.During < s.Before || s.During < s.After {
				t.Fatalf("trial %d: step %d needs %d, less than before (%d) or after (%d)", trial, i, s.During, s.Before, s.After)
			}
			peak = max(peak, s.During)
		}
		if peak != full.Peak || steps[len(steps)-1].End != full.Makespan {
			t.Fatalf("trial %d: trace peak %d, end %g; replay peak %d, makespan %g",
				trial, peak, steps[len(steps)-1].End, full.Peak, full.Makespan)
		}
	}
}

// TestTraceSkipsOutOfRange checks that an operation the replay cannot place has no step.
func TestTraceSkipsOutOfRange(t *testing.T) {
	seq := append([]chainplan.Op{{Kind: chainplan.FAll, Stage: 9}}, chainplan.StoreAllSequence(4)...)
	steps, rep := simulate.Trace(uniform(), seq)
	if rep.Valid || len(steps) != len(seq)-1 || steps[0].Index != 1 {
		t.Fatalf("got valid=%v and %d steps starting at op %d, want invalid, %d steps from op 1",
			rep.Valid, len(steps), steps[0].Index, len(seq)-1)
	}
}
