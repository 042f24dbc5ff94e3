package simulate_test

import (
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/discretize"
	"github.com/chainplan/chainplan/planner/simulate"
)

// exactChain is a two-stage chain with the exact memory model: stage 1 saves its input but
// not its output (a convolution), stage 2 saves its output but not its input (a ReLU), so
// a_1 leaves memory after F_all 2; stage 1 recomputes in 1 where its forward takes 3, and
// has an option keeping 2 of its 6 internal bytes.
func exactChain() *chainplan.Chain {
	return &chainplan.Chain{Format: chainplan.ChainFormatV2, InputBytes: 2, Stages: []chainplan.Stage{
		{Name: "conv", FwdTime: 3, BwdTime: 5, OutBytes: 4, SavedBytes: 10,
			SavesInput: chainplan.Bool(true), SavesOutput: chainplan.Bool(false), RecomputeTime: chainplan.Float(1),
			RecomputeTmpBytes: chainplan.Int(0),
			Options:           []chainplan.StageOption{{SavedBytes: 6, RecomputeTime: 1.5, Keep: []int{0}}}},
		{Name: "relu", FwdTime: 2, BwdTime: 2, OutBytes: 3, SavedBytes: 5,
			SavesInput: chainplan.Bool(false), SavesOutput: chainplan.Bool(true), RecomputeTime: chainplan.Float(2)},
	}}
}

// TestExactModel replays sequences on exactChain whose peaks and makespans were worked
// out by hand from the rules of liveness.go; the version 1 reading of the same chain (every
// output held to its backward, whole recomputations) is the baseline.
func TestExactModel(t *testing.T) {
	tests := []struct {
		name          string
		seq           []chainplan.Op
		peak          int64
		makespan      float64
		v1Peak, v1Mks int64 // the conservative replay; v1Mks < 0 when it has no option
	}{
		// a_1 goes after F_all 2 (neither stage saved it): B 2 finds 12 in memory, not 16.
		{"StoreAll", ops("F_all 1", "F_all 2", "F_all 3", "B 3", "B 2", "B 1"), 20, 12, 24, 12},
		// F_all 1 right before B 1 recomputes in u_R = 1 and makes no a_1.
		{"EarlyStop", ops("F_ck 1", "F_all 2", "F_all 3", "B 3", "B 2", "F_all 1", "B 1"), 14, 13, 18, 15},
		// Option 1 keeps 6 of ā_1 = 10; B 1 recomputes the rest (1.5) first.
		{"Option", []chainplan.Op{{Kind: chainplan.FAll, Stage: 1, Option: 1}, {Kind: chainplan.FAll, Stage: 2},
			{Kind: chainplan.FAll, Stage: 3}, {Kind: chainplan.B, Stage: 3}, {Kind: chainplan.B, Stage: 2},
			{Kind: chainplan.B, Stage: 1}}, 16, 13.5, -1, -1},
	}
	c := exactChain()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := simulate.Replay(c, tt.seq, -1)
			if !rep.Valid {
				t.Fatal(rep.Err())
			}
			if rep.Peak != tt.peak || rep.Makespan != tt.makespan {
				t.Fatalf("peak %d, makespan %v; want %d, %v", rep.Peak, rep.Makespan, tt.peak, tt.makespan)
			}
			if tt.v1Peak < 0 {
				return
			}
			v1 := simulate.Replay(c.Conservative(), tt.seq, -1)
			if v1.Peak != tt.v1Peak || v1.Makespan != float64(tt.v1Mks) {
				t.Fatalf("version 1: peak %d, makespan %v; want %d, %d", v1.Peak, v1.Makespan, tt.v1Peak, tt.v1Mks)
			}
		})
	}
	// An option the stage does not have is an issue.
	bad := []chainplan.Op{{Kind: chainplan.FAll, Stage: 2, Option: 1}, {Kind: chainplan.B, Stage: 2}}
	if rep := simulate.Run(discretize.Exact(c), bad, -1); rep.Valid {
		t.Fatal("an unknown option replayed")
	}
}

func ops(specs ...string) []chainplan.Op {
	out := make([]chainplan.Op, len(specs))
	for i, s := range specs {
		var kind string
		var stage int
		for j := len(s) - 1; j >= 0; j-- {
			if s[j] == ' ' {
				kind = s[:j]
				for _, ch := range s[j+1:] {
					stage = stage*10 + int(ch-'0')
				}
				break
			}
		}
		out[i] = chainplan.Op{Kind: chainplan.OpKind(kind), Stage: stage}
	}
	return out
}
