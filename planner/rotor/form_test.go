package rotor

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/bruteforce"
	"github.com/chainplan/chainplan/planner/internal/discretize"
	"github.com/chainplan/chainplan/planner/internal/testchains"
	"github.com/chainplan/chainplan/planner/simulate"
)

// withForm adds a form option (chainplan.StageOption.Form) to the last stage of c: another
// computation of it with its own ā, times and backward temporaries.
func withForm(c *chainplan.Chain, saved, fwdTmp, bwdTmp int64, fwd, bwd float64) {
	s := &c.Stages[len(c.Stages)-1]
	s.Options = append(s.Options, chainplan.StageOption{SavedBytes: saved, FwdTmpBytes: fwdTmp, Keep: []int{},
		Form: "unfused_head", FwdTime: chainplan.Float(fwd), BwdTime: chainplan.Float(bwd), BwdTmpBytes: chainplan.Int(bwdTmp)})
}

// headChain is a language model's chain in miniature: two blocks and a head whose fused
// form (the stage's own) keeps little and runs slower, and whose unfused form (the form
// option) keeps the logits (60 bytes more, 40 more in its backward) and runs faster.
func headChain() *chainplan.Chain {
	c := &chainplan.Chain{Format: chainplan.ChainFormatV2, InputBytes: 10, Stages: []chainplan.Stage{
		{Name: "b0", FwdTime: 1, BwdTime: 2, OutBytes: 10, SavedBytes: 40, SavesInput: chainplan.Bool(true), SavesOutput: chainplan.Bool(false)},
		{Name: "b1", FwdTime: 1, BwdTime: 2, OutBytes: 10, SavedBytes: 40, SavesInput: chainplan.Bool(true), SavesOutput: chainplan.Bool(false)},
		{Name: "head", FwdTime: 1.2, BwdTime: 0.3, OutBytes: 1, SavedBytes: 12, FwdTmpBytes: 8, BwdTmpBytes: 8},
	}, Loss: chainplan.Loss{FwdTime: 0.01, BwdTime: 0.01}}
	withForm(c, 72, 0, 40, 0.5, 0.5)
	return c
}

// TestFormOptionChosenPerBudget: at a budget where the unfused head fits, rotor-ops runs it
// (the plan names its form for the executor); at a smaller one, the fused head; and each
// plan replays within its budget at its makespan.
func TestFormOptionChosenPerBudget(t *testing.T) {
	c := headChain()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	opts := Options{Slots: -1, StageOptions: true}
	min, err := MinBudget(c, opts)
	if err != nil {
		t.Fatal(err)
	}
	large := StoreAllPeak(c) + 200
	for _, tc := range []struct {
		budget int64
		form   string
	}{{large, "unfused_head"}, {min, ""}} {
		p, err := Solve(c, tc.budget, opts)
		if err != nil {
			t.Fatalf("budget %d: %v", tc.budget, err)
		}
		form := ""
		for _, ch := range chainplan.ChoicesOf(c, p.Sequence) {
			if ch.Stage == 3 {
				form = ch.Form
			}
		}
		if form != tc.form {
			t.Fatalf("budget %d: the head runs form %q, want %q (%s)", tc.budget, form, tc.form, chainplan.FormatSequence(p.Sequence))
		}
		rep := simulate.Replay(c, p.Sequence, tc.budget)
		if !rep.Valid || rep.Makespan != p.Makespan {
			t.Fatalf("budget %d: plan replays %+v, planned makespan %v", tc.budget, rep, p.Makespan)
		}
	}
	// Store-all with the unfused head: the blocks' and the form's times, nothing recomputed.
	if p, _ := Solve(c, large, opts); p.Makespan != 1+2+1+2+0.5+0.5+0.02 {
		t.Fatalf("makespan %v with the unfused head at budget %d", p.Makespan, large)
	}
}

// TestFormOptionAgainstExhaustive compares rotor-ops with the exhaustive search of the exact
// model on random chains whose last stage has a form option: never below the optimum, and
// above it rarely (persistence), as TestExactAgainstExhaustive.
func TestFormOptionAgainstExhaustive(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	pairs, above, forms := 0, 0, 0
	for i := 0; i < randomCount()/15; i++ {
		c := testchains.Random(rng, 1+rng.IntN(4), testchains.RandomOptions{MaxSize: 8, MaxOverhead: 2, Exact: true, Options: 1})
		last := &c.Stages[len(c.Stages)-1]
		withForm(c, last.OutBytes+rng.Int64N(12), rng.Int64N(3), rng.Int64N(6), float64(rng.IntN(6)), float64(rng.IntN(6)))
		dc := discretize.Exact(c)
		form := len(last.Options)
		for b := dc.A[0]; b <= StoreAllPeak(c)+20; b++ {
			want, seq, ok := bruteforce.OptimalExact(dc, b)
			po, err := Solve(c, b, Options{Slots: -1, StageOptions: true})
			if !ok {
				if !errors.Is(err, chainplan.ErrInfeasible) {
					t.Fatalf("chain %d budget %d: exhaustive finds nothing, rotor-ops %v", i, b, err)
				}
				continue
			}
			if rep := simulate.Run(dc, seq, b); !rep.Valid || rep.Makespan > want+1e-9 {
				t.Fatalf("chain %d budget %d: exhaustive %s (%v) replays %+v", i, b, chainplan.FormatSequence(seq), want, rep)
			}
			pairs++
			if err != nil {
				above++
				continue
			}
			if rep := simulate.Replay(c, po.Sequence, b); !rep.Valid {
				t.Fatalf("chain %d budget %d: rotor-ops plan %s replays %+v", i, b, chainplan.FormatSequence(po.Sequence), rep)
			}
			for _, op := range po.Sequence {
				if op.Option == form && op.Stage == len(c.Stages) {
					forms++
				}
			}
			if po.Makespan < want-1e-9 {
				t.Fatalf("chain %d budget %d: rotor-ops %v below the optimum %v (%s)", i, b, po.Makespan, want, chainplan.FormatSequence(seq))
			}
			if po.Makespan > want+1e-9 {
				above++
			}
		}
	}
	if pairs == 0 || forms == 0 || float64(above) > 0.05*float64(pairs) {
		t.Fatalf("rotor-ops above the exact optimum in %d of %d feasible cases (the form run in %d)", above, pairs, forms)
	}
	t.Logf("rotor-ops above the exact optimum in %d of %d feasible pairs; the form run in %d", above, pairs, forms)
}
