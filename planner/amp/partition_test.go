package amp

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// onePartition is the paper's problem: one speed class, e[c] the cost of cutting after
// block c (1-based count of blocks before the cut, as Comm takes it).
func onePartition(t []float64, e map[int]float64, k, gas int) *cutProblem {
	pre := make([]float64, len(t)+1)
	for i, x := range t {
		pre[i+1] = pre[i] + x
	}
	return &cutProblem{Pre: [][]float64{pre}, Class: make([]int, k), GAS: gas,
		Comm: func(c, _ int) float64 { return e[c] }}
}

// paperDP is Appendix A.1 as written: dp(i, j, m) over the first i layers in j stages with
// tolerance M[m], passing max(t2, m) down (Eqs. 6-8, base case at j = 1 per [R]). O(k·L⁴).
func paperDP(t []float64, e func(c, j int) float64, k, gas int) float64 {
	L := len(t)
	pre := make([]float64, L+1)
	for i, x := range t {
		pre[i+1] = pre[i] + x
	}
	seg := func(a, b int) float64 { return pre[b] - pre[a] }
	ms := []float64{0}
	for a := 0; a < L; a++ {
		for b := a + 1; b <= L; b++ {
			ms = append(ms, seg(a, b))
		}
	}
	slices.Sort(ms)
	ms = slices.Compact(ms)
	idx := map[float64]int{}
	for i, v := range ms {
		idx[v] = i
	}
	type key struct{ i, j, m int }
	memo := map[key]float64{}
	g := float64(gas - 1)
	var dp func(i, j, mi int) float64
	dp = func(i, j, mi int) float64 {
		if v, ok := memo[key{i, j, mi}]; ok {
			return v
		}
		m := ms[mi]
		var best float64
		if j == 1 {
			t1 := seg(0, i)
			best = g*math.Max(0, t1-m) + t1
		} else {
			best = math.Inf(1)
			for ip := j - 1; ip < i; ip++ {
				t2 := seg(ip, i)
				c := dp(ip, j-1, idx[math.Max(t2, m)])
				if v := c + g*math.Max(0, t2-m) + t2 + e(ip, j-1); v < best {
					best = v
				}
			}
		}
		memo[key{i, j, mi}] = best
		return best
	}
	return dp(L, k, idx[0])
}

// bruteForce tries every assignment of L blocks to k stages (C(L−1, k−1) of them).
func bruteForce(p *cutProblem, L, k int) (float64, []int) {
	best, bestBounds := math.Inf(1), []int(nil)
	bounds := make([]int, k+1)
	bounds[k] = L
	var rec func(j, from int)
	rec = func(j, from int) {
		if j == k {
			if c := p.Cost(bounds); c < best {
				best, bestBounds = c, slices.Clone(bounds)
			}
			return
		}
		for b := from; b <= L-(k-j); b++ {
			bounds[j] = b
			rec(j+1, b+1)
		}
	}
	bounds[0] = 0
	rec(1, 1)
	return best, bestBounds
}

// AP-1..AP-6: the DP unit cases of spec §3.9 (e keyed by the 0-based layer after which
// the cut falls, so e[2] is Comm(3, ·)).
func TestDPUnitCases(t *testing.T) {
	t6 := []float64{1, 2, 3, 4, 5, 6}
	t8 := []float64{4, 4, 4, 4, 1, 1, 1, 1}
	tests := []struct {
		name   string
		t      []float64
		e      map[int]float64
		k, gas int
		want   float64
		bounds [][]int // the optimal boundaries, any of them; nil when every partition ties
	}{
		{"DP-1", t6, nil, 3, 4, 48, [][]int{{0, 3, 5, 6}}},
		{"DP-2", t6, nil, 3, 1, 21, nil},
		{"DP-3", t6, map[int]float64{3: 10}, 3, 4, 51, [][]int{{0, 4, 5, 6}}},
		{"DP-4", t8, nil, 2, 8, 104, [][]int{{0, 2, 8}, {0, 3, 8}}},
		{"DP-5", t8, nil, 2, 1, 20, nil},
		{"DP-6", t8, map[int]float64{4: 0.5}, 4, 16, 140, [][]int{{0, 1, 2, 3, 8}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := onePartition(tt.t, tt.e, tt.k, tt.gas)
			got, bounds := p.Solve()
			if got != tt.want {
				t.Fatalf("Solve()=%v %v, want %v", got, bounds, tt.want)
			}
			if c := p.Cost(bounds); c != got {
				t.Fatalf("Cost(%v)=%v, Solve said %v", bounds, c, got)
			}
			if tt.bounds != nil && !slices.ContainsFunc(tt.bounds, func(b []int) bool { return slices.Equal(b, bounds) }) {
				t.Fatalf("boundaries %v, want one of %v", bounds, tt.bounds)
			}
		})
	}
	// DP-4's lesson: the uniform layer-count split [0,4,8] costs 7·16 + 20 = 132.
	if got := onePartition(t8, nil, 2, 8).Cost([]int{0, 4, 8}); got != 132 {
		t.Fatalf("uniform cost %v, want 132", got)
	}
}

// AP-7: the DP equals brute force and the paper's recursion on random instances with
// L ≤ 10, and with per-stage speed classes (which the paper's DP does not cover) equals
// brute force.
func TestDPBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(26, 7))
	n := 3000
	if testing.Short() {
		n = 800
	}
	for range n {
		L := 1 + r.IntN(10)
		k := 1 + r.IntN(L)
		gas := 1 + r.IntN(9)
		tt := make([]float64, L)
		for i := range tt {
			tt[i] = float64(r.IntN(20)) // integers: sums are exact, ties are real ties
		}
		e := make([][]float64, k)
		for j := range e {
			e[j] = make([]float64, L+1)
			for c := range e[j] {
				if r.IntN(3) == 0 {
					e[j][c] = float64(r.IntN(8))
				}
			}
		}
		comm := func(c, j int) float64 { return e[j][c] }
		p := onePartition(tt, nil, k, gas)
		p.Comm = comm
		got, bounds := p.Solve()
		want, _ := bruteForce(p, L, k)
		if got != want || p.Cost(bounds) != got {
			t.Fatalf("t=%v k=%d gas=%d: Solve=%v %v, brute force %v", tt, k, gas, got, bounds, want)
		}
		if paper := paperDP(tt, func(c, j int) float64 { return comm(c, j-1) }, k, gas); paper != want {
			t.Fatalf("t=%v k=%d gas=%d: paper DP %v, brute force %v", tt, k, gas, paper, want)
		}
		// Eq. 4's synchronisation term, affine in each stage's parameters.
		p.Sync = &syncTerm{Base: make([]float64, k), PerByte: make([]float64, k), Bytes: make([]float64, L+1)}
		for i := range L {
			p.Sync.Bytes[i+1] = p.Sync.Bytes[i] + float64(r.IntN(6))
		}
		for j := range k {
			p.Sync.Base[j], p.Sync.PerByte[j] = float64(r.IntN(3)), float64(r.IntN(4))
		}
		got, bounds = p.Solve()
		want, _ = bruteForce(p, L, k)
		if got != want || p.Cost(bounds) != got {
			t.Fatalf("sync: t=%v k=%d gas=%d: Solve=%v %v, brute force %v", tt, k, gas, got, bounds, want)
		}
		// Two speed classes: stage j on class j%2, class 1 three times slower.
		p.Pre = append(p.Pre, make([]float64, L+1))
		for i := range tt {
			p.Pre[1][i+1] = p.Pre[1][i] + 3*tt[i]
		}
		for j := range p.Class {
			p.Class[j] = j % 2
		}
		got, bounds = p.Solve()
		want, _ = bruteForce(p, L, k)
		if got != want || p.Cost(bounds) != got {
			t.Fatalf("classes: t=%v k=%d gas=%d: Solve=%v %v, brute force %v", tt, k, gas, got, bounds, want)
		}
	}
}

// The property tests of spec §3.9.
func TestDPProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 9))
	for range 300 {
		L := 2 + r.IntN(12)
		gas := 1 + r.IntN(8)
		tt := make([]float64, L)
		for i := range tt {
			tt[i] = float64(1 + r.IntN(30))
		}
		// 3. With e = 0 the optimum does not increase with k.
		prev := math.Inf(1)
		for k := 1; k <= L; k++ {
			got, _ := onePartition(tt, nil, k, gas).Solve()
			if got > prev {
				t.Fatalf("t=%v gas=%d: cost rose from %v to %v at k=%d", tt, gas, prev, got, k)
			}
			prev = got
		}
		// 5. Scaling t and e by a constant scales the cost.
		k := 1 + r.IntN(L)
		e := map[int]float64{1 + r.IntN(L): float64(r.IntN(5))}
		base, _ := onePartition(tt, e, k, gas).Solve()
		scaled := make([]float64, L)
		for i := range tt {
			scaled[i] = 4 * tt[i]
		}
		e4 := map[int]float64{}
		for c, v := range e {
			e4[c] = 4 * v
		}
		if got, _ := onePartition(scaled, e4, k, gas).Solve(); got != 4*base {
			t.Fatalf("scaled cost %v, want 4 × %v", got, base)
		}
	}
	// 2. Uniform t, e = 0: the bottleneck is ⌈L/k⌉·t.
	for L := 1; L <= 12; L++ {
		for k := 1; k <= L; k++ {
			u := make([]float64, L)
			for i := range u {
				u[i] = 2
			}
			p := onePartition(u, nil, k, 5)
			_, bounds := p.Solve()
			if got, want := p.bottleneck(bounds), float64(2*((L+k-1)/k)); got != want {
				t.Fatalf("L=%d k=%d: bottleneck %v, want %v", L, k, got, want)
			}
		}
	}
	// 4. gas = 1, e = 0: every partition ties at Σt.
	if got, _ := onePartition([]float64{5, 1, 7, 2}, nil, 3, 1).Solve(); got != 15 {
		t.Fatalf("gas=1: %v, want 15", got)
	}
}
