package simulate

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/discretize"
	"github.com/chainplan/chainplan/planner/internal/testchains"
)

// legacyRun is the replay of rotor spec §2.5 as it stood before the exact memory model (the
// sets of present a_i and ā_i), kept as the oracle that the exact replay of a version 1
// chain must equal.
func legacyRun(c *discretize.Chain, seq []chainplan.Op, limit int64) *Report {
	var onStep func(Step)
	n := c.N
	inA := make([]bool, n+1)    // a_i present
	inAbar := make([]bool, n+1) // ā_i present
	inA[0] = true
	d := n // current gradient index; δ_N has size 0
	size := c.A[0]
	r := &Report{Limit: limit, Peak: size, PeakIndex: -1}
	add := func(i int, op chainplan.Op, msg string, args ...any) {
		r.Issues = append(r.Issues, Issue{Index: i, Op: op, Msg: fmt.Sprintf(msg, args...)})
	}
	setA := func(i int, on bool) {
		if inA[i] != on {
			inA[i] = on
			if on {
				size += c.A[i]
			} else {
				size -= c.A[i]
			}
		}
	}
	setAbar := func(i int, on bool) {
		if inAbar[i] != on {
			inAbar[i] = on
			if on {
				size += c.ABar[i]
			} else {
				size -= c.ABar[i]
			}
		}
	}
	var during int64 // what the current operation needs while it runs
	reach := func(i int, op chainplan.Op, peak int64) {
		during = peak
		if peak > r.Peak {
			r.Peak, r.PeakIndex = peak, i
		}
		if limit >= 0 && peak > limit {
			add(i, op, "needs %s, over the limit of %s", unitLabel(c, peak), unitLabel(c, limit))
		}
	}
	for i, op := range seq {
		l := op.Stage
		if l < 1 || l > n {
			add(i, op, "stage %d out of range 1..%d (the loss is stage %d)", l, n, n)
			continue
		}
		start, before := r.Makespan, size
		switch op.Kind {
		case chainplan.FAll, chainplan.FCk:
			if !inA[l-1] && !inAbar[l-1] {
				add(i, op, "input a_%d is not in memory", l-1)
			}
			out := c.A[l]
			if op.Kind == chainplan.FAll {
				out = c.ABar[l]
			}
			reach(i, op, size+out+c.OF[l])
			if op.Kind == chainplan.FAll {
				setAbar(l, true)
			} else {
				setA(l, true)
			}
			r.Makespan += c.UF[l]
		case chainplan.FNone:
			if !inA[l-1] {
				if inAbar[l-1] {
					add(i, op, "F_none cannot read ā_%d; it needs the plain activation a_%d", l-1, l-1)
				} else {
					add(i, op, "input a_%d is not in memory", l-1)
				}
			}
			reach(i, op, size+c.A[l]+c.OF[l])
			setA(l, true)
			setA(l-1, false)
			r.Makespan += c.UF[l]
		case chainplan.B:
			switch {
			case l > d:
				add(i, op, "backward of stage %d already ran", l)
			case l < d:
				add(i, op, "backward out of order: B %d must run first", d)
			}
			if !inAbar[l] {
				add(i, op, "ā_%d is not in memory (no F_all of stage %d since its last use)", l, l)
			}
			if !inA[l-1] && !inAbar[l-1] {
				add(i, op, "input a_%d is not in memory", l-1)
			}
			reach(i, op, size+c.Grad(l-1)+c.OB[l])
			setAbar(l, false)
			setA(l-1, false)
			// The gradient δ_l is replaced by δ_{l-1}.
			if l <= d {
				size += c.Grad(l-1) - c.Grad(d)
				d = l - 1
			}
			r.Makespan += c.UB[l]
		default:
			add(i, op, "unknown operation %q", op.Kind)
			continue
		}
		if onStep != nil {
			onStep(Step{Index: i, Op: op, Start: start, End: r.Makespan, Before: before, During: during, After: size})
		}
	}
	if d != 0 {
		add(-1, chainplan.Op{}, "the sequence ends before the backward of stage %d (backwards %d..1 never ran)", d, d)
	}
	r.Valid = len(r.Issues) == 0
	return r
}

// randomSequence draws a persistent sequence (rotor spec §3.2) over stages 1..n: each
// sub-chain (s, t) is either F_s^all, (s+1, t), B_s or F_s^ck F_{s+1}^∅ … F_{s'}^∅, (s'+1, t),
// (s, s'), chosen at random, so every sequence the persistent DP can emit may come up.
// One in ten gets an operation changed at random, to exercise the issues too.
func randomSequence(rng *rand.Rand, n int) []chainplan.Op {
	var seq []chainplan.Op
	var build func(s, t int)
	build = func(s, t int) {
		if s == t || rng.IntN(3) == 0 {
			seq = append(seq, chainplan.Op{Kind: chainplan.FAll, Stage: s})
			if s < t {
				build(s+1, t)
			}
			seq = append(seq, chainplan.Op{Kind: chainplan.B, Stage: s})
			return
		}
		sp := s + rng.IntN(t-s)
		seq = append(seq, chainplan.Op{Kind: chainplan.FCk, Stage: s})
		for k := s + 1; k <= sp; k++ {
			seq = append(seq, chainplan.Op{Kind: chainplan.FNone, Stage: k})
		}
		build(sp+1, t)
		build(s, sp)
	}
	build(1, n)
	if rng.IntN(10) == 0 {
		kinds := []chainplan.OpKind{chainplan.FAll, chainplan.FCk, chainplan.FNone, chainplan.B}
		seq[rng.IntN(len(seq))] = chainplan.Op{Kind: kinds[rng.IntN(4)], Stage: 1 + rng.IntN(n)}
	}
	return seq
}

// canonical reports whether seq never runs a forward of stage ℓ while a_ℓ or ā_ℓ is present
// in the model of spec §2.5: the canonical sequences of spec §4.6, which every planner
// emits. (Elsewhere a second forward is free in §2.5, which counts a present activation
// once, while the executor makes a second copy.)
func canonical(seq []chainplan.Op, n int) bool {
	inA := make([]bool, n+1)
	inAbar := make([]bool, n+1)
	for _, op := range seq {
		l := op.Stage
		if l < 1 || l > n {
			return false
		}
		switch op.Kind {
		case chainplan.B:
			inAbar[l], inA[l-1] = false, false
			continue
		case chainplan.FAll:
			if inA[l] || inAbar[l] {
				return false
			}
			inAbar[l] = true
		default:
			if inA[l] || inAbar[l] {
				return false
			}
			inA[l] = true
			if op.Kind == chainplan.FNone {
				inA[l-1] = false
			}
		}
	}
	return true
}

// TestVersion1MatchesLegacy replays thousands of random sequences on random version 1
// chains (every stage saves its input and output, recomputes its whole forward) with the
// exact replay and with the replay of spec §2.5: validity, issues and makespan agree on every
// sequence, and the peak on every valid canonical one (the planners' kind).
func TestVersion1MatchesLegacy(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	count := 4000
	if testing.Short() {
		count = 1500
	}
	valid := 0
	for i := 0; i < count; i++ {
		c := testchains.Random(rng, 1+rng.IntN(7), testchains.RandomOptions{MaxSize: 9})
		dc := discretize.Exact(c)
		seq := randomSequence(rng, dc.N)
		got, want := Run(dc, seq, -1), legacyRun(dc, seq, -1)
		if got.Valid != want.Valid || got.Makespan != want.Makespan || fmt.Sprint(got.Issues) != fmt.Sprint(want.Issues) {
			t.Fatalf("chain %d, sequence %s:\nexact  %+v\nlegacy %+v", i, chainplan.FormatSequence(seq), got, want)
		}
		if !want.Valid || !canonical(seq, dc.N) {
			continue
		}
		valid++
		if got.Peak != want.Peak {
			t.Fatalf("chain %d, sequence %s: exact peak %d, legacy %d", i, chainplan.FormatSequence(seq), got.Peak, want.Peak)
		}
	}
	if valid < count/2 {
		t.Fatalf("only %d of %d random sequences are valid", valid, count)
	}
}
