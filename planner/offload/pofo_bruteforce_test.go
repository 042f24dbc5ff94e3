package offload

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/testchains"
	"github.com/chainplan/chainplan/planner/offload/internal/units"
)

// remats returns every persistent rematerialization sequence of the sub-chain s..t
// (the structure of spec §2: F_s^all … B_s, or F_s^ck F_{s+1}^∅ … F_{s'}^∅, then s'+1..t,
// then s..s').
func remats(s, t int) [][]chainplan.Op {
	op := func(k chainplan.OpKind, st int) chainplan.Op { return chainplan.Op{Kind: k, Stage: st} }
	if s == t {
		return [][]chainplan.Op{{op(chainplan.FAll, s), op(chainplan.B, s)}}
	}
	var out [][]chainplan.Op
	for _, sub := range remats(s+1, t) {
		seq := append([]chainplan.Op{op(chainplan.FAll, s)}, sub...)
		out = append(out, append(seq, op(chainplan.B, s)))
	}
	for sp := s; sp < t; sp++ {
		head := []chainplan.Op{op(chainplan.FCk, s)}
		for k := s + 1; k <= sp; k++ {
			head = append(head, op(chainplan.FNone, k))
		}
		for _, right := range remats(sp+1, t) {
			for _, left := range remats(s, sp) {
				seq := append(append(append([]chainplan.Op(nil), head...), right...), left...)
				out = append(out, seq)
			}
		}
	}
	return out
}

// segment is one forward segment of a POFO-shaped schedule (spec §4.3).
type segment struct {
	s, t    int
	ck      bool // F_s^ck … F_t^∅ (else F_s^all, t = s)
	offload bool
	back    []chainplan.Op // its backward (ck segments)
}

// bruteForcePOFO returns the smallest fractional makespan, found by the simulator, over
// every schedule of the POFO space (segments, offload choices, rematerialization of each
// ck segment), synchronized at the loss.
func bruteForcePOFO(c *units.Chain, m, beta float64) float64 {
	n := c.N
	best := math.Inf(1)
	var rec func(s, x int, segs []segment)
	rec = func(s, x int, segs []segment) {
		if s == n {
			if v := evalSegments(c, segs, m, beta); v < best {
				best = v
			}
			return
		}
		for _, off := range []bool{false, true} {
			rec(s+1, 1, append(segs, segment{s: s, t: s, offload: off}))
			for t := s; t < n; t++ {
				for _, back := range remats(s, t) {
					rec(t+1, 0, append(segs, segment{s: s, t: t, ck: true, offload: off, back: back}))
				}
			}
		}
	}
	rec(1, 0, nil)
	return best
}

// evalSegments builds the schedule of the segments and returns its simulated makespan
// (+Inf when invalid).
func evalSegments(c *units.Chain, segs []segment, m, beta float64) float64 {
	n := c.N
	var ops []chainplan.Op
	var offs, pres []chainplan.Transfer
	emit := func(k chainplan.OpKind, s int) { ops = append(ops, chainplan.Op{Kind: k, Stage: s}) }
	x := 0
	for _, sg := range segs {
		in := tensorOf(sg.s-1, x == 1)
		size := c.A[sg.s-1]
		if x == 1 {
			size = c.ABar[sg.s-1]
		}
		if sg.offload {
			offs = append(offs, chainplan.Transfer{Dir: chainplan.TransferOffload, Tensor: in, Bytes: int64(size), Anchor: len(ops) - 1})
		}
		if sg.ck {
			emit(chainplan.FCk, sg.s)
			for k := sg.s + 1; k <= sg.t; k++ {
				emit(chainplan.FNone, k)
			}
			x = 0
		} else {
			emit(chainplan.FAll, sg.s)
			x = 1
		}
	}
	emit(chainplan.FAll, n)
	emit(chainplan.B, n)
	for i := len(segs) - 1; i >= 0; i-- {
		sg := segs[i]
		if sg.offload {
			x := i > 0 && !segs[i-1].ck
			size := c.A[sg.s-1]
			if x {
				size = c.ABar[sg.s-1]
			}
			pres = append(pres, chainplan.Transfer{Dir: chainplan.TransferPrefetch, Tensor: tensorOf(sg.s-1, x), Bytes: int64(size), Anchor: len(ops)})
		}
		if sg.ck {
			ops = append(ops, sg.back...)
		} else {
			emit(chainplan.B, sg.s)
		}
	}
	s := Schedule{Compute: ops, Transfers: append(offs, pres...), SyncAtLoss: true}
	r := Replay(c, s, SimOptions{BandwidthBytesPerS: beta, LimitBytes: int64(m), Model: chainplan.Fractional})
	if !r.Valid {
		return math.Inf(1)
	}
	return r.Makespan
}

// TestPOFOBruteForce compares the DP with an exhaustive search of its schedule space on
// chains of up to 4 stages plus the loss, every candidate timed by the simulator: the DP's
// schedule is in the space (brute force ≤ DP), and the DP finds the best one.
func TestPOFOBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	count := 1500
	if testing.Short() {
		count = 500
	}
	equal := 0
	for i := 0; i < count; i++ {
		c := testchains.Random(rng, 1+rng.IntN(4), testchains.RandomOptions{MaxSize: 6, MaxOverhead: 2})
		ex := units.Exact(c)
		peak := int64(ex.StoreAllPeak())
		m := float64(peak/2 + rng.Int64N(peak/2+1))
		beta := float64(1 + rng.IntN(4))
		_, v := exactValue(c, m, beta, false)
		bf := bruteForcePOFO(ex, m, beta)
		if math.IsInf(v, 1) != math.IsInf(bf, 1) {
			t.Fatalf("chain %d (M=%v β=%v): DP %v, brute force %v", i, m, beta, v, bf)
		}
		if math.IsInf(v, 1) {
			continue
		}
		if bf > v+1e-9*v {
			t.Fatalf("chain %d: brute force %v above the DP %v: the DP's schedule is outside the space", i, bf, v)
		}
		if v > bf+1e-9*v {
			t.Errorf("chain %d (M=%v β=%v): DP %v, brute force %v", i, m, beta, v, bf)
		}
		equal++
	}
	t.Logf("%d feasible cases compared", equal)
}
