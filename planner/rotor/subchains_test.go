package rotor

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/discretize"
	"github.com/chainplan/chainplan/planner/internal/testchains"
	"github.com/chainplan/chainplan/planner/simulate"
)

// TestSubChainsMatchNaive checks every sub-chain and budget of the shared table against
// Theorem 6 evaluated by naive recursion on the same discretization, and replays each
// sequence from the state a recomputing pipeline stage starts its backward in (a_{s−1} and
// δ_t held): valid, its makespan the table's value, its peak within a_{s−1} + budget.
func TestSubChainsMatchNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	cases := 0
	n := randomCount() / 4
	if raceEnabled {
		n = 40 // every sub-chain and byte budget of each: the race detector makes it slow
	}
	for i := 0; i < n; i++ {
		c := testchains.Random(rng, 1+rng.IntN(6), testchains.RandomOptions{MaxSize: 9, MaxOverhead: 3})
		maxBytes := StoreAllPeak(c) + 10
		slots := []int64{-1, 7}[i%2] // exact bytes, then a coarse grid
		if slots < 0 {
			slots = maxBytes
		}
		sc, err := NewSubChains(c, maxBytes, slots)
		if err != nil {
			t.Fatal(err)
		}
		nv := newNaive(discretize.WithUnit(c, sc.Unit()), false)
		l := len(c.Stages)
		for s := 1; s <= l; s++ {
			for e := s; e <= l; e++ {
				in := c.InputBytes
				if s > 1 {
					in = c.Stages[s-2].OutBytes
				}
				if need := sc.Need(s, e); need >= 0 && math.IsInf(sc.Time(s, e, need), 1) {
					t.Fatalf("chain %d (%d, %d): Need %d gives no finite time", i, s, e, need)
				}
				for b := int64(-1); b <= maxBytes; b++ {
					got := sc.Time(s, e, b)
					want := math.Inf(1)
					if b >= 0 {
						want = nv.C(s, e, min(b/sc.Unit(), maxBytes/sc.Unit()))
					}
					if got != want {
						t.Fatalf("chain %d (%d, %d) budget %d: table %v, naive %v", i, s, e, b, got, want)
					}
					seq, err := sc.Sequence(s, e, b)
					if math.IsInf(got, 1) {
						if !errors.Is(err, chainplan.ErrInfeasible) {
							t.Fatalf("chain %d (%d, %d) budget %d: infeasible, Sequence %v", i, s, e, b, err)
						}
						if need := sc.Need(s, e); need >= 0 && b >= need {
							t.Fatalf("chain %d (%d, %d): budget %d ≥ Need %d but infeasible", i, s, e, b, need)
						}
						continue
					}
					cases++
					rep := simulate.RunFrom(c, s, e, seq, in+b)
					if !rep.Valid || rep.Makespan != got {
						t.Fatalf("chain %d (%d, %d) budget %d: replay %+v of %v, table %v", i, s, e, b, rep, seq, got)
					}
				}
			}
		}
	}
	if cases == 0 {
		t.Fatal("no feasible case")
	}
}

// TestRunFromStoreAll replays the store-all backward of a sub-chain: its makespan is the
// layers' forward and backward times and its peak the simulator's own accounting.
func TestRunFromStoreAll(t *testing.T) {
	c := testchains.ExampleA().Chain
	l := len(c.Stages)
	var seq []chainplan.Op
	for k := 1; k <= l; k++ {
		seq = append(seq, chainplan.Op{Kind: chainplan.FAll, Stage: k})
	}
	for k := l; k >= 1; k-- {
		seq = append(seq, chainplan.Op{Kind: chainplan.B, Stage: k})
	}
	rep := simulate.RunFrom(c, 1, l, seq, -1)
	if !rep.Valid || rep.Makespan != c.SumTime()-c.Loss.FwdTime-c.Loss.BwdTime {
		t.Fatalf("store-all replay %+v", rep)
	}
	if bad := simulate.RunFrom(c, 1, l, seq[:len(seq)-1], -1); bad.Valid {
		t.Fatal("a sequence without B 1 replays as valid")
	}
}

// TestSubChainsExactReplay checks the shared table on chains of the exact memory model
// (chainplan.chain/v2): every sequence it gives a sub-chain at a budget at or above Need
// replays from the state a recomputing pipeline stage starts its backward in (a_{s−1}
// held by the stage to its end, δ_t given) within a_{s−1} + budget, at the table's time.
func TestSubChainsExactReplay(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	n := randomCount() / 2
	if raceEnabled {
		n = 60
	}
	cases := 0
	for i := 0; i < n; i++ {
		c := testchains.Random(rng, 1+rng.IntN(6), testchains.RandomOptions{MaxSize: 9, MaxOverhead: 3, Exact: true})
		maxBytes := StoreAllPeak(c) + 10
		slots := []int64{-1, 7}[i%2]
		if slots < 0 {
			slots = maxBytes
		}
		sc, err := NewSubChains(c, maxBytes, slots)
		if err != nil {
			t.Fatal(err)
		}
		l := len(c.Stages)
		for s := 1; s <= l; s++ {
			in := c.InputBytes
			if s > 1 {
				in = c.Stages[s-2].OutBytes
			}
			for e := s; e <= l; e++ {
				need := sc.Need(s, e)
				if need < 0 {
					continue
				}
				for b := need; b <= maxBytes; b += 1 + sc.Unit() {
					seq, err := sc.Sequence(s, e, b)
					if err != nil {
						t.Fatalf("chain %d (%d, %d) budget %d ≥ Need %d: %v", i, s, e, b, need, err)
					}
					cases++
					rep := simulate.RunFrom(c, s, e, seq, in+b)
					if !rep.Valid {
						t.Fatalf("chain %d (%d, %d) budget %d: replay %+v of %v\n%s", i, s, e, b, rep, seq, describe(c))
					}
					if got := sc.Time(s, e, b); rep.Makespan != got {
						t.Fatalf("chain %d (%d, %d) budget %d: replay %+v of %v, table %v\n%s", i, s, e, b, rep, seq, got, describe(c))
					}
				}
			}
		}
	}
	if cases == 0 {
		t.Fatal("no feasible case")
	}
}

// describe prints a chain of the exact model for a failure message.
func describe(c *chainplan.Chain) string {
	b, err := c.MarshalIndent()
	if err != nil {
		return err.Error()
	}
	return string(b)
}
