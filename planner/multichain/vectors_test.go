package multichain

import (
	"testing"

	"github.com/chainplan/chainplan"
)

// mustTable builds the table of in for m slots.
func mustTable(t *testing.T, in *instance, m int) *table {
	t.Helper()
	tb, err := newTable(in, m)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// checkSchedule replays the schedule of Opt(L, m) in the unit model: valid, within m
// slots, with the table's value as its makespan.
func checkSchedule(t *testing.T, in *instance, tb *table, m int) {
	t.Helper()
	want := tb.value(m)
	if want == inf {
		return
	}
	_, ops := tb.schedule(m)
	got, peak, err := replayUnits(in, ops, m)
	if err != nil {
		t.Fatalf("L=%v b=%v m=%d: schedule does not replay: %v", in.L, in.b0, m, err)
	}
	if got != want || peak > m {
		t.Fatalf("L=%v b=%v m=%d: schedule makespan %v peak %d, DP %v", in.L, in.b0, m, got, peak, want)
	}
}

func bools(s string) []bool {
	b := make([]bool, len(s))
	for i, c := range s {
		b[i] = c == '1'
	}
	return b
}

// TestOpt0 checks the adjoint chain with uniform times against spec §3.2's values (u_F =
// u_B = 1) and the forward-count table of rotor spec §4.1 (u_F = 1, u_B = 0).
func TestOpt0(t *testing.T) {
	unit := func(n int, uF, uB float64) *adjoint {
		f, b := make([]float64, n+1), make([]float64, n+1)
		for q := 1; q <= n; q++ {
			f[q], b[q] = uF, uB
		}
		return newAdjoint(f, b, 20)
	}
	ones := unit(30, 1, 1)
	for _, v := range []struct {
		l, m int
		want float64
	}{{8, 9, 18}, {7, 9, 15}, {6, 7, 14}, {5, 7, 11}, {3, 4, 8}, {3, 5, 7}, {29, 3, 465}, {0, 2, 1}, {0, 1, inf}, {1, 2, inf}} {
		if got := ones.value(0, v.l, v.m); got != v.want {
			t.Errorf("Opt_0(%d, %d) = %v, want %v", v.l, v.m, got, v.want)
		}
	}
	fwd := unit(31, 1, 0)
	table := map[int][]float64{ // rotor spec §4.1, m = 3..8
		1: {1, 1, 1, 1, 1, 1}, 2: {3, 2, 2, 2, 2, 2}, 5: {15, 8, 7, 6, 5, 5},
		10: {55, 24, 18, 16, 15, 14}, 20: {210, 70, 49, 42, 35, 34}, 30: {465, 133, 89, 72, 65, 57},
	}
	for l, row := range table {
		for i, want := range row {
			if got := fwd.value(0, l, 3+i); got != want {
				t.Errorf("forward count Opt_0(%d, %d) = %v, want %v", l, 3+i, got, want)
			}
		}
	}
	// The binomial closed form of spec §3.2, p(ℓ+1, m−2)·u_F + (ℓ+1)·u_B, for u = (2, 3).
	het := unit(40, 2, 3)
	for l := 0; l < 40; l++ {
		for m := 3; m < 15; m++ {
			if got, want := het.value(0, l, m), 2*float64(revolveAdvances(l+1, m-2))+3*float64(l+1); got != want {
				t.Fatalf("Opt_0(%d, %d) = %v, closed form %v", l, m, got, want)
			}
		}
	}
}

// revolveAdvances is p(n, c) of spec §3.2: t·n − C(c+t, c+1) with C(c+t−1, c) < n ≤ C(c+t, c).
func revolveAdvances(n, c int) int {
	if n <= 1 {
		return 0
	}
	binom := func(a, b int) int {
		r := 1
		for i := 1; i <= b; i++ {
			r = r * (a - b + i) / i
		}
		return r
	}
	t := 0
	for binom(c+t, c) < n {
		t++
	}
	return t*n - binom(c+t, c+1)
}

// TestToyExample checks spec §7.1: L = (4, 10, 12), m = 9, MULTI-∅ costs 74 (not the 75 of
// the thesis's first decision, erratum E1), its decision chain under the tie rule, the
// sub-problems, and the m sweeps.
func TestToyExample(t *testing.T) {
	in := uniformInstance([]int{4, 10, 12}, bools("000"), 1, 1, 1)
	tb := mustTable(t, in, 29)
	if got := tb.value(9); got != 74 {
		t.Fatalf("Opt((4,10,12), 9) = %v, want 74", got)
	}
	dec, ops := tb.schedule(9)
	want := []chainplan.Decision{{Branch: 2, Steps: 8}, {Branch: 3, Steps: 6}, {Branch: 3, Steps: 5},
		{Branch: 1, Steps: 4}, {Branch: 2, Steps: 2}, {Branch: 3, Steps: 1}}
	if len(dec) != len(want) {
		t.Fatalf("decisions %v, want %v", dec, want)
	}
	for i := range want {
		if dec[i] != want[i] {
			t.Fatalf("decisions %v, want %v", dec, want)
		}
	}
	var nF, nB int
	for _, o := range ops {
		switch o.kind {
		case unitF:
			nF++
		case unitB:
			nB++
		}
	}
	if nF != 47 || nB != 26 {
		t.Fatalf("%d forwards and %d backwards, want 47 and 26 (spec §7.1)", nF, nB)
	}
	checkSchedule(t, in, tb, 9)
	for m := 0; m <= 31; m++ {
		want := inf
		switch {
		case m == 7:
			want = 88
		case m == 8:
			want = 81
		case m == 9:
			want = 74
		case m >= 10 && m <= 29:
			want = float64(82 - m)
		case m > 29:
			want = 53
		}
		if got := tb.value(m); got != want {
			t.Errorf("b=000 m=%d: %v, want %v", m, got, want)
		}
		checkSchedule(t, in, tb, m)
	}
	keep := uniformInstance([]int{4, 10, 12}, bools("111"), 1, 1, 1)
	tk := mustTable(t, keep, 29)
	for m, want := range map[int]float64{6: inf, 7: 97, 8: 85, 9: 78, 10: 72, 20: 62} {
		if got := tk.value(m); got != want {
			t.Errorf("b=111 m=%d: %v, want %v", m, got, want)
		}
	}
	for _, sub := range []struct {
		l    []int
		m    int
		b    string
		want float64
	}{{[]int{4, 10, 3}, 8, "001", 48}, {[]int{4, 3, 3}, 7, "011", 27}, {[]int{4, 10, 4}, 8, "001", 51},
		{[]int{0, 0, 3}, 5, "111", 8}} {
		in := uniformInstance(sub.l, bools(sub.b), 1, 1, 1)
		tb := mustTable(t, in, sub.m)
		if got := tb.value(sub.m); got != sub.want {
			t.Errorf("Opt(%v, %d, %s) = %v, want %v", sub.l, sub.m, sub.b, got, sub.want)
		}
		checkSchedule(t, in, tb, sub.m)
	}
}

// TestSmallInstances checks the table of spec §7.2 (all confirmed there by brute force):
// the values from m_min to K+ΣL for three cost triples, and the other listed instances.
func TestSmallInstances(t *testing.T) {
	costs := [][3]float64{{1, 1, 1}, {2, 3, 1}, {3, 1, 5}}
	tests := []struct {
		l    []int
		b    []string
		mMin int
		want [][]float64 // per cost triple, m = m_min..
	}{
		{[]int{2, 2}, []string{"00", "11"}, 5, [][]float64{{10, 9}, {23, 21}, {24, 21}}},
		{[]int{3, 3}, []string{"00", "11"}, 5, [][]float64{{16, 15, 14, 13}, {37, 35, 33, 31}, {38, 35, 32, 29}}},
		{[]int{2, 3, 4}, []string{"000", "111"}, 7, [][]float64{{24, 23, 22, 21, 20, 19}, {56, 54, 52, 50, 48, 46},
			{56, 53, 50, 47, 44, 41}}},
		{[]int{1, 5}, []string{"00"}, 4, [][]float64{{19, 16, 15, 14, 13}, {43, 37, 35, 33, 31}, {47, 38, 35, 32, 29}}},
		{[]int{1, 5}, []string{"11"}, 4, [][]float64{{23, 16, 15, 14, 13}, {51, 37, 35, 33, 31}, {59, 38, 35, 32, 29}}},
		{[]int{0, 4}, []string{"00"}, 3, [][]float64{{15, 11, 10, 9}, {33, 25, 23, 21}, {39, 27, 24, 21}}},
		{[]int{0, 4}, []string{"11"}, 4, [][]float64{{12, 10, 9}, {27, 23, 21}, {30, 24, 21}}},
		{[]int{2, 1}, []string{"00"}, 4, [][]float64{{8, 7}}},
		{[]int{1, 1}, []string{"11"}, 4, [][]float64{{5}}},
		{[]int{0, 2}, []string{"10"}, 4, [][]float64{{5}}},
		{[]int{9}, []string{"0", "1"}, 3, nil}, // SINGLE(9, 9) = 20 below
	}
	for _, tt := range tests {
		for _, b := range tt.b {
			for ci, want := range tt.want {
				u := costs[ci]
				in := uniformInstance(tt.l, bools(b), u[0], u[1], u[2])
				if got := minSlots(in.L, in.L, in.b0, in.keepInputs); got != tt.mMin {
					t.Errorf("m_min(%v, %s) = %d, want %d", tt.l, b, got, tt.mMin)
				}
				tb := mustTable(t, in, tt.mMin+len(want))
				if got := tb.value(tt.mMin - 1); got != inf {
					t.Errorf("L=%v b=%s u=%v m=%d: %v below m_min", tt.l, b, u, tt.mMin-1, got)
				}
				for i, w := range want {
					if got := tb.value(tt.mMin + i); got != w {
						t.Errorf("L=%v b=%s u=%v m=%d: %v, want %v", tt.l, b, u, tt.mMin+i, got, w)
					}
					checkSchedule(t, in, tb, tt.mMin+i)
				}
			}
		}
	}
	single := mustTable(t, uniformInstance([]int{9}, nil, 1, 1, 1), 9)
	if got := single.value(9); got != 20 {
		t.Errorf("SINGLE(9, 9) = %v, want 20", got)
	}
	fig := uniformInstance([]int{5, 4, 6}, bools("000"), 1, 1, 1)
	tf := mustTable(t, fig, 18)
	for i, want := range []float64{44, 41, 40, 39, 38, 37, 36, 35, 34, 33, 32, 31} {
		if got := tf.value(7 + i); got != want {
			t.Errorf("Fig. 1.2 m=%d: %v, want %v", 7+i, got, want)
		}
	}
	if got := mustTable(t, uniformInstance([]int{5, 4, 6}, bools("111"), 1, 1, 1), 8).value(7); got != 47 {
		t.Errorf("Fig. 1.2 b=111 m=7: %v, want 47", got)
	}
	for b, want := range map[string]float64{"000": 56, "111": 59} {
		if got := mustTable(t, uniformInstance([]int{4, 6, 8}, bools(b), 1, 1, 1), 7).value(7); got != want {
			t.Errorf("Opt((4,6,8), 7, %s) = %v, want %v", b, got, want)
		}
	}
}

// TestHeterogeneousTimes checks the heterogeneous-time vector of spec §7.2: L = (3, 4) with
// per-stage u_F and u_B and u_L = 2.
func TestHeterogeneousTimes(t *testing.T) {
	for b, want := range map[string][]float64{"00": {39, 36, 34, 32, 31}, "11": {41, 36, 34, 32, 31}} {
		in := &instance{L: []int{3, 4}, uL: 2, b0: bools(b),
			uF: [][]float64{{0, 3, 1, 2}, {0, 2, 2, 1, 4}}, uB: [][]float64{{0, 1, 4, 2}, {0, 2, 1, 3, 1}}}
		tb := mustTable(t, in, 9)
		for m := 0; m <= 4; m++ {
			if got := tb.value(m); got != inf {
				t.Errorf("b=%s m=%d: %v, want infeasible", b, m, got)
			}
		}
		for i, w := range want {
			if got := tb.value(5 + i); got != w {
				t.Errorf("b=%s m=%d: %v, want %v", b, 5+i, got, w)
			}
			checkSchedule(t, in, tb, 5+i)
		}
	}
}
