package multichain

import (
	"math/rand/v2"
	"testing"
)

// randomInstance draws K ≤ 3 branches with ΣL ≤ maxSum, b⁰, and either a cost triple of spec
// §8 or integer per-stage times 0..5 (spec §6's heterogeneous check) with u_L 0..3.
func randomInstance(rng *rand.Rand, maxSum int) *instance {
	in := drawInstance(rng, maxSum)
	in.keepInputs = rng.IntN(2) == 0
	return in
}

func drawInstance(rng *rand.Rand, maxSum int) *instance {
	k := 1 + rng.IntN(3)
	l := make([]int, k)
	left := maxSum
	for j := range l {
		l[j] = rng.IntN(min(left, 4) + 1)
		left -= l[j]
	}
	b := make([]bool, k)
	for j := range b {
		b[j] = rng.IntN(2) == 1
	}
	if rng.IntN(2) == 0 {
		triples := [][3]float64{{1, 1, 1}, {2, 3, 1}, {1, 0, 0}, {3, 1, 5}}
		u := triples[rng.IntN(len(triples))]
		return uniformInstance(l, b, u[0], u[1], u[2])
	}
	in := &instance{L: l, b0: b, uL: float64(rng.IntN(4))}
	for _, n := range l {
		f, bw := make([]float64, n+1), make([]float64, n+1)
		for q := 1; q <= n; q++ {
			f[q], bw[q] = float64(rng.IntN(6)), float64(rng.IntN(6))
		}
		in.uF, in.uB = append(in.uF, f), append(in.uB, bw)
	}
	return in
}

// TestAgainstExhaustive compares the dynamic program with the exhaustive search of Table
// 1.1 (bruteForce) on seeded random instances at every slot count from 0 to K+ΣL+1, and
// Lemma 2 with the smallest slot count the search finds feasible (spec §8: 0 mismatches on
// 52 000 cases). Every schedule of the DP replays in the unit model with the DP's value.
func TestAgainstExhaustive(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(24, 7))
	n, maxSum := 1500, 5
	if testing.Short() {
		n, maxSum = 80, 4
	}
	cases := 0
	for range n {
		in := randomInstance(rng, maxSum)
		top := in.k() + in.sumL() + in.bare() + 1
		tb := mustTable(t, in, top)
		firstFeasible := -1
		for m := 0; m <= top; m++ {
			want := bruteForce(in, m)
			if got := tb.value(m); got != want {
				t.Fatalf("L=%v b=%v uF=%v uB=%v uL=%v m=%d: DP %v, exhaustive %v", in.L, in.b0, in.uF, in.uB, in.uL, m, got, want)
			}
			if want != inf && firstFeasible < 0 {
				firstFeasible = m
			}
			checkSchedule(t, in, tb, m)
			cases++
		}
		if got := minSlots(in.L, in.L, in.b0, in.keepInputs); got != firstFeasible {
			t.Fatalf("L=%v b=%v: Lemma 2 says %d slots, the exhaustive search %d", in.L, in.b0, got, firstFeasible)
		}
	}
	t.Logf("%d (instance, m) cases equal the exhaustive search", cases)
}

// TestSingleChain: with K = 1 the DP is SINGLE(L, m) = Opt_0(L−1, m) + u_F + u_L (spec
// §3.1, L726), for L ≤ 40, m ≤ 15 and three cost triples.
func TestSingleChain(t *testing.T) {
	for _, u := range [][3]float64{{1, 1, 1}, {2, 3, 1}, {3, 1, 5}} {
		ac := newAdjoint(uniformInstance([]int{40}, nil, u[0], u[1], u[2]).uF[0],
			uniformInstance([]int{40}, nil, u[0], u[1], u[2]).uB[0], 15)
		for l := 1; l <= 40; l++ {
			for _, b := range []string{"0", "1"} {
				tb := mustTable(t, uniformInstance([]int{l}, bools(b), u[0], u[1], u[2]), 15)
				for m := 0; m <= 15; m++ {
					want := inf
					if v := ac.value(0, l-1, m); v != inf && m >= 2 {
						want = v + u[0] + u[2]
					}
					if got := tb.value(m); got != want {
						t.Fatalf("u=%v L=%d b=%s m=%d: %v, want SINGLE %v", u, l, b, m, got, want)
					}
				}
			}
		}
	}
}

// TestMonotone: more slots never cost time, and keeping input gradients never saves any
// (spec §8, check_misc.py), on random heterogeneous instances.
func TestMonotone(t *testing.T) {
	rng := rand.New(rand.NewPCG(24, 8))
	for range 200 {
		in := randomInstance(rng, 9)
		top := in.k() + in.sumL() + in.bare() + 2
		tb := mustTable(t, in, top)
		keep := *in
		keep.b0 = make([]bool, in.k())
		for j := range keep.b0 {
			keep.b0[j] = true
		}
		tk := mustTable(t, &keep, top)
		for m := 1; m <= top; m++ {
			if tb.value(m) > tb.value(m-1) {
				t.Fatalf("L=%v b=%v: Opt(m=%d) %v > Opt(m=%d) %v", in.L, in.b0, m, tb.value(m), m-1, tb.value(m-1))
			}
			if tk.value(m) < tb.value(m) {
				t.Fatalf("L=%v b=%v m=%d: keeping every input gradient costs %v < %v", in.L, in.b0, m, tk.value(m), tb.value(m))
			}
		}
		if got, want := tb.value(in.k()+in.sumL()+in.bare()), in.storeAll(); got != want {
			t.Fatalf("L=%v: at K+ΣL slots %v, want the store-all makespan %v", in.L, got, want)
		}
	}
}
