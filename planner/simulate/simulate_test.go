package simulate_test

import (
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/discretize"
	"github.com/chainplan/chainplan/planner/internal/testchains"
	"github.com/chainplan/chainplan/planner/simulate"
)

// parseSeq reads "F_ck 1, F_none 2, B 2" into ops.
func parseSeq(t *testing.T, s string) []chainplan.Op {
	t.Helper()
	var seq []chainplan.Op
	for _, part := range strings.Split(s, ",") {
		var op chainplan.Op
		var kind string
		f := strings.Fields(part)
		if len(f) != 2 {
			t.Fatalf("bad op %q", part)
		}
		kind = f[0]
		op.Kind = chainplan.OpKind(kind)
		for _, ch := range f[1] {
			op.Stage = op.Stage*10 + int(ch-'0')
		}
		seq = append(seq, op)
	}
	return seq
}

// uniform is a chain of four stages plus the loss with unit times and the given sizes.
func uniform() *chainplan.Chain {
	c := &chainplan.Chain{Format: chainplan.ChainFormat, InputBytes: 1}
	for i := 0; i < 4; i++ {
		c.Stages = append(c.Stages, chainplan.Stage{FwdTime: 1, BwdTime: 2, OutBytes: 1, SavedBytes: 2})
	}
	c.Loss = chainplan.Loss{FwdTime: 1, BwdTime: 1}
	return c
}

// TestSpecSequences replays the three example sequences of rotor spec §2.4 (L = 4).
func TestSpecSequences(t *testing.T) {
	tests := []struct {
		name, seq string
		fwd       int // number of forward operations
	}{
		{"Sequential", "F_ck 1, F_none 2, F_ck 3, F_all 4, F_all 5, B 5, B 4, F_all 3, B 3, F_all 1, F_all 2, B 2, B 1", 8},
		{"Revolve", "F_ck 1, F_none 2, F_ck 3, F_ck 4, F_all 5, B 5, F_all 4, B 4, F_all 3, B 3, F_ck 1, F_all 2, B 2, F_all 1, B 1", 10},
		{"Rotor", "F_ck 1, F_none 2, F_all 3, F_ck 4, F_all 5, B 5, F_all 4, B 4, B 3, F_all 1, F_all 2, B 2, B 1", 8},
	}
	dc := discretize.Exact(uniform())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := simulate.Run(dc, parseSeq(t, tt.seq), -1)
			if !rep.Valid {
				t.Fatalf("invalid: %v", rep.Err())
			}
			// Forward time 1 each, backward 2 each for stages 1-4 and 1 for the loss.
			if got, want := rep.Makespan, float64(tt.fwd+4*2+1); got != want {
				t.Fatalf("makespan %v, want %v", got, want)
			}
		})
	}
}

func TestPeakExampleA(t *testing.T) {
	dc := discretize.Exact(testchains.ExampleA().Chain)
	// rotor spec §4.7: this sequence peaks at 22, the store-all sequence at 31.
	rep := simulate.Run(dc, parseSeq(t, "F_ck 1, F_none 2, F_all 3, F_all 4, B 4, B 3, F_ck 1, F_all 2, B 2, F_all 1, B 1"), 22)
	if !rep.Valid || rep.Peak != 22 || rep.Makespan != 23 {
		t.Fatalf("report %+v", rep)
	}
	rep = simulate.Run(dc, chainplan.StoreAllSequence(3), 30)
	if rep.Valid || rep.Peak != 31 || len(rep.Issues) != 1 || !strings.Contains(rep.Issues[0].Msg, "over the limit of 30") {
		t.Fatalf("report %+v", rep)
	}
}

func TestInvalidSequences(t *testing.T) {
	dc := discretize.Exact(uniform())
	tests := []struct {
		name, seq string
		want      []string
	}{
		{"NoneFromSaved", "F_all 1, F_none 2", []string{"F_none cannot read ā_1", "ends before the backward of stage 5"}},
		{"MissingInput", "F_none 1, F_all 1", []string{"op 1 (F_all 1): input a_0 is not in memory"}},
		{"BackwardWithoutForward", "F_ck 1, F_ck 2, F_ck 3, F_ck 4, B 5", []string{"ā_5 is not in memory"}},
		{"OutOfOrder", "F_all 1, F_all 2, F_all 3, F_all 4, F_all 5, B 4", []string{"backward out of order: B 5 must run first"}},
		{"Repeated", "F_all 1, F_all 2, F_all 3, F_all 4, F_all 5, B 5, B 4, B 3, B 2, B 1, B 1", []string{"backward of stage 1 already ran"}},
		{"OutOfRange", "F_all 6", []string{"stage 6 out of range 1..5"}},
		{"Empty", "", []string{"ends before the backward of stage 5"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seq []chainplan.Op
			if tt.seq != "" {
				seq = parseSeq(t, tt.seq)
			}
			rep := simulate.Run(dc, seq, -1)
			if rep.Valid {
				t.Fatal("accepted an invalid sequence")
			}
			msg := rep.Err().Error()
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("%q does not contain %q", msg, w)
				}
			}
		})
	}
}
