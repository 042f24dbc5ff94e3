package multichain

import "math"

// inf marks an infeasible entry. Tables never add to it (spec §10.12): every sum checks
// its terms first.
var inf = math.Inf(1)

// adjoint is the heterogeneous-time adjoint-chain optimum AC_j(p, ℓ, μ) of one branch (spec
// §6, the Griewank–Walther DP; Opt_0 of Theorem 1 when the times are uniform): the best
// time to reverse stages p+1..p+ℓ+1 starting from a_p and δ_{p+ℓ+1} in memory and ending
// with δ_p, with μ slots counting a_p, the working value and the gradient. It performs the
// forwards F_{p+1}..F_{p+ℓ} as often as needed and every backward B_{p+1}..B_{p+ℓ+1} once:
//
//	AC(p, 0, μ) = u_B(p+1)                                            μ ≥ 2
//	AC(p, ℓ, μ) = min_{1≤i≤ℓ} [ P(p+i) − P(p) + AC(p+i, ℓ−i, μ−1) + AC(p, i−1, μ) ]   μ ≥ 3
//
// with P the prefix sums of u_F, and ∞ below (spec §3.1: (1.3), i up to ℓ inclusive, not
// (1.2)). Choice i replicates a_p, forwards i steps on the copy, reverses the tail with one
// slot fewer, then the head with all of them. From μ ≥ ℓ+2 on every forward runs once and
// the value is Σu_F + Σu_B (the clamp of spec §3.3); the table stops there.
type adjoint struct {
	n      int       // L_j
	cols   int       // slots stored: 0..cols−1; larger μ are clamped
	prefix []float64 // P(q) = u_F(1) + … + u_F(q)
	bsum   []float64 // Σ_{r≤q} u_B(r)
	uB     []float64
	row    []int // row(p, ℓ) starts at row[p] + ℓ
	val    []float64
	arg    []int32 // the smallest i reaching the minimum
}

// newAdjoint fills AC for every p, ℓ with p+ℓ ≤ L−1 and μ ≤ maxSlots. It takes
// O(L³·min(maxSlots, L)) time and O(L²·min(maxSlots, L)) memory.
func newAdjoint(uF, uB []float64, maxSlots int) *adjoint {
	n := len(uF) - 1
	a := &adjoint{n: n, cols: max(0, min(maxSlots, n+1)) + 1, uB: uB,
		prefix: make([]float64, n+1), bsum: make([]float64, n+1), row: make([]int, n+1)}
	for q := 1; q <= n; q++ {
		a.prefix[q] = a.prefix[q-1] + uF[q]
		a.bsum[q] = a.bsum[q-1] + uB[q]
	}
	rows := 0
	for p := 0; p < n; p++ {
		a.row[p] = rows
		rows += n - p // ℓ = 0..n−1−p
	}
	a.val = make([]float64, rows*a.cols)
	a.arg = make([]int32, rows*a.cols)
	for l := 0; l < n; l++ {
		for p := 0; p+l < n; p++ {
			a.fill(p, l)
		}
	}
	return a
}

func (a *adjoint) at(p, l int) int { return (a.row[p] + l) * a.cols }

// fill computes row (p, ℓ) from rows of smaller ℓ.
func (a *adjoint) fill(p, l int) {
	base := a.at(p, l)
	for mu := 0; mu < a.cols; mu++ {
		v, arg := inf, int32(0)
		switch {
		case l == 0 && mu >= 2:
			v = a.uB[p+1]
		case l == 0, mu <= 2:
		case mu >= l+2:
			v, arg = a.clamped(p, l), 1
		default:
			for i := 1; i <= l; i++ {
				tail := a.value(p+i, l-i, mu-1)
				if tail == inf {
					continue
				}
				head := a.value(p, i-1, mu)
				if head == inf {
					continue
				}
				if c := a.prefix[p+i] - a.prefix[p] + tail + head; c < v {
					v, arg = c, int32(i)
				}
			}
		}
		a.val[base+mu], a.arg[base+mu] = v, arg
	}
}

// clamped is AC(p, ℓ, μ) for μ ≥ ℓ+2: every forward once, every backward once.
func (a *adjoint) clamped(p, l int) float64 {
	return a.prefix[p+l] - a.prefix[p] + a.bsum[p+l+1] - a.bsum[p]
}

// value returns AC(p, ℓ, μ).
func (a *adjoint) value(p, l, mu int) float64 {
	if mu < 0 {
		return inf
	}
	if mu >= a.cols {
		if l == 0 || mu >= l+2 {
			return a.clamped(p, l)
		}
		panic("multichain: an adjoint-chain value beyond the slots of its table")
	}
	return a.val[a.at(p, l)+mu]
}

// choice returns the i of AC(p, ℓ, μ), ℓ ≥ 1, μ feasible.
func (a *adjoint) choice(p, l, mu int) int {
	if mu >= a.cols || mu >= l+2 {
		return 1
	}
	return int(a.arg[a.at(p, l)+mu])
}
