package simulate_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/discretize"
	"github.com/chainplan/chainplan/planner/internal/testchains"
	"github.com/chainplan/chainplan/planner/rotor"
	"github.com/chainplan/chainplan/planner/simulate"
)

// twoTowers is a bundle small enough to replay by hand: a one-stage tower and a two-stage
// tower joined by a loss with temporaries.
func twoTowers() *chainplan.MultiChain {
	st := func(uF, uB float64, a, abar, oF, oB int64) chainplan.Stage {
		return chainplan.Stage{FwdTime: uF, BwdTime: uB, OutBytes: a, SavedBytes: abar, FwdTmpBytes: oF, BwdTmpBytes: oB}
	}
	return &chainplan.MultiChain{Format: chainplan.MultiChainFormat,
		Branches: []chainplan.Chain{
			{Format: chainplan.ChainFormat, InputBytes: 4, Stages: []chainplan.Stage{st(1, 2, 3, 5, 1, 2)}},
			{Format: chainplan.ChainFormat, InputBytes: 2, Stages: []chainplan.Stage{st(2, 1, 1, 1, 0, 0), st(1, 1, 2, 3, 0, 1)}},
		},
		Loss: chainplan.Loss{FwdTime: 1, BwdTime: 1, FwdTmpBytes: 2, BwdTmpBytes: 1}}
}

// mops reads "F_all 1.1, F_all 0.0, free_grad 2.0" (branch.stage) into operations.
func mops(t *testing.T, s string) []chainplan.Op {
	t.Helper()
	var seq []chainplan.Op
	for _, part := range strings.Split(s, ",") {
		f := strings.Fields(part)
		var op chainplan.Op
		if len(f) != 2 {
			t.Fatalf("bad op %q", part)
		}
		op.Kind = chainplan.OpKind(f[0])
		bs, ss, ok := strings.Cut(f[1], ".")
		if !ok {
			t.Fatalf("bad op %q", part)
		}
		for _, ch := range bs {
			op.Branch = op.Branch*10 + int(ch-'0')
		}
		for _, ch := range ss {
			op.Stage = op.Stage*10 + int(ch-'0')
		}
		seq = append(seq, op)
	}
	return seq
}

const storeAllTwoTowers = "F_all 1.1, F_all 2.1, F_all 2.2, F_all 0.0, B 0.0, B 2.2, B 2.1, free_grad 2.0, B 1.1, free_grad 1.0"

// TestRunMultiByHand checks a replay worked out by hand: memory 6 at the start, 12 11 12 15
// 17 15 after and during the forwards and the loss, 21 during the loss's backward (15 +
// gradients 3 + 2 + its temporary 1), then 22 during B 2.2 (20 + δ_1 1 + o_B 1); the
// inputs (4 + 2) stay to the end.
func TestRunMultiByHand(t *testing.T) {
	rep := simulate.RunMulti(twoTowers(), mops(t, storeAllTwoTowers), -1)
	if err := rep.Err(); err != nil {
		t.Fatal(err)
	}
	if rep.Peak != 22 || rep.PeakIndex != 5 || rep.Makespan != 10 {
		t.Fatalf("peak %d at %d, makespan %v; want 22 at 5 and 10", rep.Peak, rep.PeakIndex, rep.Makespan)
	}
	steps, _ := simulate.TraceMulti(twoTowers(), mops(t, storeAllTwoTowers))
	var after []int64
	for _, s := range steps {
		after = append(after, s.After)
	}
	if got, want := after, []int64{11, 12, 15, 15, 20, 16, 16, 14, 10, 6}; !equalInts(got, want) {
		t.Fatalf("memory after each op %v, want %v", got, want)
	}
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestRunMultiIssues(t *testing.T) {
	keep := twoTowers()
	keep.KeepInputGrad = []bool{false, true}
	tests := []struct {
		name  string
		mc    *chainplan.MultiChain
		seq   string
		limit int64
		want  string // a fragment of the first issue
	}{
		{"over the limit", twoTowers(), storeAllTwoTowers, 21, "needs 22 B, over the limit of 21 B"},
		{"backward before the loss", twoTowers(), "F_all 1.1, B 1.1", -1, "backward before the joint loss"},
		{"loss input missing", twoTowers(), "F_all 1.1, F_all 0.0", -1, "input a_2 of branch 2 is not in memory"},
		{"loss twice", twoTowers(), "F_all 1.1, F_all 2.1, F_all 2.2, F_all 0.0, F_all 0.0", -1, "the joint loss already ran"},
		{"loss backward first", twoTowers(), "B 0.0", -1, "needs its forward first"},
		{"out of order", twoTowers(), "F_all 1.1, F_all 2.1, F_all 2.2, F_all 0.0, B 0.0, B 2.1", -1, "B 2.2 must run first"},
		{"no saved tensor", twoTowers(), "F_all 1.1, F_ck 2.1, F_all 2.2, F_all 0.0, B 0.0, B 2.2, B 2.1", -1, "ā_1 of branch 2 is not in memory"},
		{"F_none on ā", twoTowers(), "F_all 2.1, F_none 2.2", -1, "F_none needs the plain activation a_1"},
		{"branch out of range", twoTowers(), "F_all 3.1", -1, "branch 3 out of range 0..2"},
		{"stage out of range", twoTowers(), "F_all 2.3", -1, "stage 3 out of range 1..2 of branch 2"},
		{"loss stage", twoTowers(), "F_all 0.1", -1, "the joint loss is stage 0 of branch 0"},
		{"free_grad early", twoTowers(), "free_grad 1.0", -1, "before its backward finished"},
		{"free_grad kept", keep, storeAllTwoTowers, -1, "keep_input_grad keeps the input gradient of branch 2"},
		{"gradient left", twoTowers(), strings.TrimSuffix(storeAllTwoTowers, ", free_grad 1.0"), -1,
			"the input gradient of branch 1 is still in memory at the end"},
		{"plain copy", twoTowers(), "F_ck 1.1, " + storeAllTwoTowers, -1, ""},
		{"activation left", twoTowers(), "F_all 1.1, F_all 2.1, F_all 2.2, F_all 0.0, B 0.0, F_ck 2.2, B 2.2, B 2.1, " +
			"free_grad 2.0, B 1.1, free_grad 1.0", -1, "a_2 of branch 2 is still in memory at the end"},
		{"F_none on an input", twoTowers(), "F_none 1.1", -1, "would free the input of branch 1"},
		{"unfinished", twoTowers(), "F_all 1.1, F_all 2.1, F_all 2.2, F_all 0.0, B 0.0", -1, "backwards 1..1 never ran"},
		{"no loss", twoTowers(), "F_all 1.1", -1, "ends before the joint loss's backward"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := simulate.RunMulti(tt.mc, mops(t, tt.seq), tt.limit)
			if tt.want == "" {
				// F_ck 1.1 first: the loss's backward frees the plain a_1, so this is
				// valid, and the replay must say so.
				if err := rep.Err(); err != nil {
					t.Fatalf("valid sequence refused: %v", err)
				}
				return
			}
			if rep.Valid {
				t.Fatalf("valid, want an issue %q", tt.want)
			}
			if err := rep.Err().Error(); !strings.Contains(err, tt.want) {
				t.Fatalf("issues %q, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestRunMultiKeptGradient: with keep_input_grad the input gradient stays, and is not an
// issue at the end.
func TestRunMultiKeptGradient(t *testing.T) {
	mc := twoTowers()
	mc.KeepInputGrad = []bool{true, true}
	seq := "F_all 1.1, F_all 2.1, F_all 2.2, F_all 0.0, B 0.0, B 2.2, B 2.1, B 1.1"
	if err := simulate.RunMulti(mc, mops(t, seq), -1).Err(); err != nil {
		t.Fatal(err)
	}
}

// TestRunMultiOneBranch: a bundle of one branch replays a rotor plan of the same chain
// (stage q as branch 1's stage q, the loss as branch 0, then free_grad) with the peak and
// makespan Run finds, on random chains and budgets.
func TestRunMultiOneBranch(t *testing.T) {
	rng := rand.New(rand.NewPCG(24, 1))
	for i := range 300 {
		c := testchains.Random(rng, 1+rng.IntN(8), testchains.RandomOptions{})
		peak := rotor.StoreAllPeak(c)
		budget := peak/2 + rng.Int64N(peak)
		p, err := rotor.Solve(c, budget, rotor.Options{Slots: -1})
		if err != nil {
			continue
		}
		mc := &chainplan.MultiChain{Format: chainplan.MultiChainFormat, Branches: []chainplan.Chain{*c}, Loss: c.Loss}
		mc.Branches[0].Loss = chainplan.Loss{}
		var seq []chainplan.Op
		for _, o := range p.Sequence {
			if o.Stage == c.Len()+1 {
				seq = append(seq, chainplan.Op{Kind: o.Kind})
			} else {
				seq = append(seq, chainplan.Op{Kind: o.Kind, Branch: 1, Stage: o.Stage})
			}
		}
		seq = append(seq, chainplan.Op{Kind: chainplan.FreeGrad, Branch: 1})
		want := simulate.Run(discretize.Exact(c), p.Sequence, -1)
		got := simulate.RunMulti(mc, seq, -1)
		if err := got.Err(); err != nil {
			t.Fatalf("chain %d: %v\n%s", i, err, chainplan.FormatSequence(seq))
		}
		if got.Peak != want.Peak || got.Makespan != want.Makespan {
			t.Fatalf("chain %d: peak %d makespan %v, Run says %d and %v", i, got.Peak, got.Makespan, want.Peak, want.Makespan)
		}
	}
}
