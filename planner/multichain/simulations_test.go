package multichain

import (
	"testing"
)

// family is one model of the thesis's simulations (spec §7.3): its branch lengths for a
// given L, its store-all threshold M and its m_min.
type family struct {
	name   string
	lens   func(l int) []int
	thresh func(l int) int
	mMin   int
}

var families = []family{
	{"CM", func(l int) []int { return []int{l, 5 * l} }, func(l int) int { return 6*l + 2 }, 5},
	{"SNN", func(l int) []int { return []int{2 * l, 2 * l, 2 * l} }, func(l int) int { return 6*l + 3 }, 7},
	{"RNN", func(l int) []int { return []int{6 * l} }, func(l int) int { return 6*l + 1 }, 3},
}

// TestSimulations checks the table of spec §7.3 (MULTI-∅, all costs 1): T at m_min,
// m_min+2, ⌈M/2⌉, 7, 9, 11 and 13, and Span* = 12L+1 reached exactly at the store-all
// threshold M = K + ΣL.
func TestSimulations(t *testing.T) {
	want := map[int]map[string][8]float64{ // T(m_min) T(m_min+2) T(⌈M/2⌉) T(7) T(9) T(11) T(13) Span*
		5: {"CM": {132, 99, 77, 99, 84, 82, 80, 61}, "SNN": {125, 91, 77, 125, 91, 83, 81, 61},
			"RNN": {467, 117, 76, 94, 83, 81, 79, 61}},
		10: {"CM": {337, 233, 152, 233, 202, 181, 170, 121}, "SNN": {370, 211, 152, 370, 211, 191, 171, 121},
			"RNN": {1832, 296, 151, 218, 197, 176, 169, 121}},
		15: {"CM": {596, 383, 227, 383, 323, 302, 277, 181}, "SNN": {734, 350, 227, 734, 350, 312, 289, 181},
			"RNN": {4097, 512, 226, 368, 317, 296, 271, 181}},
	}
	for _, l := range []int{5, 10, 15} {
		if l > 5 && testing.Short() {
			continue // SNN's 21³ and 31³ states take seconds under the race detector
		}
		for _, f := range families {
			in := uniformInstance(f.lens(l), nil, 1, 1, 1)
			m := f.thresh(l)
			tb := mustTable(t, in, m+1)
			if got := minSlots(in.L, in.L, in.b0, in.keepInputs); got != f.mMin {
				t.Errorf("%s L=%d: m_min %d, want %d", f.name, l, got, f.mMin)
			}
			w := want[l][f.name]
			for i, mm := range []int{f.mMin, f.mMin + 2, (m + 1) / 2, 7, 9, 11, 13, m} {
				if got := tb.value(mm); got != w[i] {
					t.Errorf("%s L=%d: T(%d) = %v, want %v", f.name, l, mm, got, w[i])
				}
			}
			if tb.value(m-1) <= w[7] || tb.value(m+1) != w[7] {
				t.Errorf("%s L=%d: Span* %v is not reached exactly at M = %d", f.name, l, w[7], m)
			}
		}
	}
}

// TestSimulationSweep checks the full sweeps at L = 5 of spec §7.3, from m_min to M+1:
// the listed head, then one less per slot down to Span* = 61.
func TestSimulationSweep(t *testing.T) {
	heads := map[string][]float64{
		"CM":  {132, 106, 99, 91, 84, 83},
		"SNN": {125, 98, 91, 84, 83},
		"RNN": {467, 158, 117, 101, 94, 86, 83, 82},
	}
	for _, f := range families {
		in := uniformInstance(f.lens(5), nil, 1, 1, 1)
		top := f.thresh(5) + 1
		tb := mustTable(t, in, top)
		head := heads[f.name]
		for m := f.mMin; m <= top; m++ {
			want := max(61, head[len(head)-1]-float64(m-f.mMin-len(head)+1))
			if i := m - f.mMin; i < len(head) {
				want = head[i]
			}
			if got := tb.value(m); got != want {
				t.Errorf("%s L=5 m=%d: %v, want %v", f.name, m, got, want)
			}
			checkSchedule(t, in, tb, m)
		}
	}
}
