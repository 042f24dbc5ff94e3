package pipesim_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/chainplan/chainplan/planner/pipesim"
)

// TiMePReSt in the simulator: the cases T-1 to T-9 of spec §4.9, the reference timelines of
// §4.5 and the in-flight counts of §4.7, in unit time.

func timeprest(t *testing.T, w, n, k int) *pipesim.Result {
	t.Helper()
	return mustSimulate(t, unitSetup(t, w), pipesim.Options{Schedule: pipesim.TiMePReSt, Microbatches: n, Minibatches: k, UnitTime: true, Record: true})
}

// grid renders the first cols time points of a unit-time timeline as the spec's tables:
// one row per stage, "F1A" for the forward of micro-batch A of mini-batch 1, "B1" for the
// backward of mini-batch 1, "·" for idle.
func grid(r *pipesim.Result, cols int) []string {
	cells := make([][]string, len(r.Stages))
	for s := range cells {
		cells[s] = slices.Repeat([]string{"·"}, cols)
	}
	for _, sp := range r.Timeline {
		c := int(sp.Start)
		if c >= cols || sp.Kind == "CF" || sp.Kind == "CB" {
			continue
		}
		label := fmt.Sprintf("%s%d", sp.Kind, sp.Minibatch+1)
		if sp.Microbatch >= 0 {
			label += string(rune('A' + sp.Microbatch))
		}
		cells[sp.Stage][c] = label
	}
	out := make([]string, len(cells))
	for s, row := range cells {
		out[s] = strings.Join(row, " ")
	}
	return out
}

// TestReferenceTimelines is T-8 (W=3, N=2: exactly the 12-column timeline of spec §4.5) and
// the 18-column timelines of W=4 with N=2 and N=4.
func TestReferenceTimelines(t *testing.T) {
	tests := []struct {
		w, n int
		want []string
	}{
		{3, 2, []string{
			"F1A F1B F2A F2B F3A F3B B1 F4A F4B B2 F5A F5B",
			"· F1A F1B F2A F2B B1 F3A F3B B2 F4A F4B B3",
			"· · F1A F1B B1 F2A F2B B2 F3A F3B B3 F4A",
		}},
		{4, 2, []string{
			"F1A F1B F2A F2B F3A F3B F4A F4B B1 F5A F5B B2 F6A F6B B3 F7A F7B B4",
			"· F1A F1B F2A F2B F3A F3B B1 F4A F4B B2 F5A F5B B3 F6A F6B B4 F7A",
			"· · F1A F1B F2A F2B B1 F3A F3B B2 F4A F4B B3 F5A F5B B4 F6A F6B",
			"· · · F1A F1B B1 F2A F2B B2 F3A F3B B3 F4A F4B B4 F5A F5B B5",
		}},
		{4, 4, []string{
			"F1A F1B F1C F1D F2A F2B F2C F2D F3A F3B B1 F3C F3D F4A F4B B2 F4C F4D",
			"· F1A F1B F1C F1D F2A F2B F2C F2D B1 F3A F3B F3C F3D B2 F4A F4B F4C",
			"· · F1A F1B F1C F1D F2A F2B B1 F2C F2D F3A F3B B2 F3C F3D F4A F4B",
			"· · · F1A F1B F1C F1D B1 F2A F2B F2C F2D B2 F3A F3B F3C F3D B3",
		}},
	}
	for _, tt := range tests {
		r := timeprest(t, tt.w, tt.n, 12)
		if got := grid(r, len(strings.Fields(tt.want[0]))); !slices.Equal(got, tt.want) {
			t.Errorf("W=%d N=%d:\n got %s\nwant %s", tt.w, tt.n, strings.Join(got, "\n     "), strings.Join(tt.want, "\n     "))
		}
	}
}

// TestTiMePReSt42 is T-1 and T-2: W=4, N=2.
func TestTiMePReSt42(t *testing.T) {
	r := timeprest(t, 4, 2, 12)
	mb := r.PerMinibatch
	if f1, f2 := mb[0].ForwardEnd-mb[0].Start, mb[1].ForwardEnd-mb[1].Start; f1 != 5 || f2 != 6 {
		t.Errorf("f1 = %v, f2 = %v; want 5 and 6 (Eqs. 6, 7)", f1, f2)
	}
	if mb[0].BackwardStart != 5 { // time point 6 is [5, 6)
		t.Errorf("B1 starts at S4 at %v, want time point 6", mb[0].BackwardStart)
	}
	for k := 2; k < len(mb); k++ {
		if d := mb[k].BackwardStart - mb[k-1].BackwardStart; d != 3 {
			t.Errorf("backward of %d starts %v after that of %d, want every 3 time points", k+1, d, k)
		}
	}
	if r.VersionDifference != 2 || r.Chains != 2 {
		t.Errorf("v = %d with %d chains, want 2 and 2", r.VersionDifference, r.Chains)
	}
	for _, m := range mb {
		if want := 2 - m.Index%2; m.Chain != want {
			t.Errorf("mini-batch %d in the chain of %d, want {1,3,5,...} and {2,4,6,...}", m.Index, m.Chain)
		}
	}
	for k, want := range map[int]int{3: 1, 4: 2, 5: 3} {
		if got := mb[k-1].BackwardVersion; got != want {
			t.Errorf("V_b(%d) = %d, want %d", k, got, want)
		}
	}
	if got := mb[4].ForwardVersions; !slices.Equal(got, []int{1, 1}) {
		t.Errorf("V_f(5,·) = %v, want [1 1]", got)
	}
	if !slices.ContainsFunc(r.Warnings, func(w string) bool {
		return strings.Contains(w, "multiple-sequence") && strings.Contains(w, "W ≤ N+1")
	}) {
		t.Errorf("no multiple-sequence warning with the equal-stage rule: %v", r.Warnings)
	}
}

// TestTiMePReSt44 is T-3: W=4, N=4.
func TestTiMePReSt44(t *testing.T) {
	r := timeprest(t, 4, 4, 12)
	mb := r.PerMinibatch
	if f1, f2 := mb[0].ForwardEnd-mb[0].Start, mb[1].ForwardEnd-mb[1].Start; f1 != 7 || f2 != 8 {
		t.Errorf("f1 = %v, f2 = %v; want 7 and 8", f1, f2)
	}
	for k := 2; k < len(mb); k++ {
		if d := mb[k].BackwardStart - mb[k-1].BackwardStart; d != 5 {
			t.Errorf("backward of %d starts %v after that of %d, want every 5 time points", k+1, d, k)
		}
	}
	if r.VersionDifference != 1 || r.Chains != 1 || mb[1].BackwardVersion != 1 || mb[2].BackwardVersion != 2 {
		t.Errorf("v = %d, chains %d, V_b(2) = %d, V_b(3) = %d; want 1, 1, 1, 2", r.VersionDifference, r.Chains, mb[1].BackwardVersion, mb[2].BackwardVersion)
	}
	if got := mb[2].ForwardVersions; !slices.Equal(got, []int{0, 0, 1, 1}) {
		t.Errorf("V_f(3A..3D) = %v, want [0 0 1 1]", got)
	}
}

// TestVersionDifference is T-4, T-5, T-6, T-7 and T-9 and the sweep of spec §4.6: the
// simulated steady-state v is ⌈W/(N+1)⌉, 1 exactly when W ≤ N+1; the paper's closed form
// ⌊(W+N−2)/N⌋ disagrees exactly at the six pairs of the spec's table (all with
// W ≥ 2N+2), and the result flags them.
func TestVersionDifference(t *testing.T) {
	named := map[[2]int]int{{3, 3}: 1, {5, 3}: 2, {6, 2}: 2} // T-4, T-5, T-6
	// spec §4.6: (W, N) → (paper, simulated) where they differ, W ≤ 10, N ≤ 8.
	differ := map[[2]int][2]int{{6, 2}: {3, 2}, {8, 2}: {4, 3}, {8, 3}: {3, 2}, {9, 2}: {4, 3}, {10, 2}: {5, 4}, {10, 4}: {3, 2}}
	for w := 2; w <= 10; w++ {
		for n := 2; n <= 8; n++ {
			r := timeprest(t, w, n, 4*w)
			steady := (w + n) / (n + 1) // ⌈W/(N+1)⌉
			if r.VersionDifference != steady {
				t.Errorf("W=%d N=%d: v = %d, want ⌈W/(N+1)⌉ = %d", w, n, r.VersionDifference, steady)
			}
			if (r.VersionDifference == 1) != (w <= n+1) { // T-7, T-9 (W = 2)
				t.Errorf("W=%d N=%d: v = %d, but W ≤ N+1 is %v", w, n, r.VersionDifference, w <= n+1)
			}
			if want, ok := named[[2]int{w, n}]; ok && r.VersionDifference != want {
				t.Errorf("W=%d N=%d: v = %d, want %d", w, n, r.VersionDifference, want)
			}
			paper := pipesim.PaperVersionDifference(w, n)
			flagged := slices.ContainsFunc(r.Warnings, func(s string) bool { return strings.Contains(s, "closed form") })
			d, listed := differ[[2]int{w, n}]
			if r.PaperVersionDifference != paper || flagged != (paper != steady) || listed != (paper != steady) ||
				listed && d != [2]int{paper, r.VersionDifference} || listed && w < 2*n+2 {
				t.Errorf("W=%d N=%d: paper v %d (reported %d), simulated %d, flagged %v, spec's table %v", w, n, paper,
					r.PaperVersionDifference, r.VersionDifference, flagged, d)
			}
		}
	}
	if r := timeprest(t, 6, 2, 24); r.PaperVersionDifference != 3 || r.VersionDifference != 2 { // T-6
		t.Errorf("W=6 N=2: paper %d, simulated %d; want 3 and 2", r.PaperVersionDifference, r.VersionDifference)
	}
}

// TestTiMePReStMemory checks the in-flight micro-batches and the weight versions of spec
// §4.7 without a cap, and that a cap of one mini-batch in flight bounds the first stage to
// N micro-batches and makes v = 1.
func TestTiMePReStMemory(t *testing.T) {
	tests := []struct {
		w, n     int
		inflight []int
		versions int // at the last stage
	}{
		{4, 2, []int{8, 6, 4, 2}, 4},
		{4, 4, []int{10, 8, 6, 4}, 3},
	}
	for _, tt := range tests {
		r := timeprest(t, tt.w, tt.n, 16)
		var got []int
		for _, x := range r.PerStage {
			got = append(got, x.PeakInflight)
		}
		if !slices.Equal(got, tt.inflight) || r.PerStage[tt.w-1].WeightVersions != tt.versions {
			t.Errorf("W=%d N=%d: in flight %v, %d versions at stage %d; want %v and %d", tt.w, tt.n, got,
				r.PerStage[tt.w-1].WeightVersions, tt.w, tt.inflight, tt.versions)
		}
	}
	r := mustSimulate(t, unitSetup(t, 4), pipesim.Options{Schedule: pipesim.TiMePReSt, Microbatches: 2, Minibatches: 8, UnitTime: true, MaxInflight: 1})
	if r.PerStage[0].PeakInflight != 2 || r.VersionDifference != 1 {
		t.Errorf("cap 1: %d in flight at stage 1, v = %d; want 2 and 1", r.PerStage[0].PeakInflight, r.VersionDifference)
	}
}

// TestTiMePReStUnequalStages: on stages of unequal times v can exceed 1 with W ≤ N+1,
// outside the paper's analysis; the warnings say why instead of quoting its equal-stage
// rules.
func TestTiMePReStUnequalStages(t *testing.T) {
	su := mustSetup(t, []float64{1, 2, 4}, []float64{2, 4, 8}, nil, 0, pipesim.SetupOptions{})
	r := mustSimulate(t, su, pipesim.Options{Schedule: pipesim.TiMePReSt, Microbatches: 4, Minibatches: 16})
	if r.VersionDifference < 2 {
		t.Fatalf("v = %d, want the multiple-sequence problem of this case", r.VersionDifference)
	}
	for _, w := range r.Warnings {
		if strings.Contains(w, "W ≤ N+1") || strings.Contains(w, "2N+2") {
			t.Errorf("an equal-stage rule quoted for unequal stages: %q", w)
		}
	}
	if !slices.ContainsFunc(r.Warnings, func(w string) bool { return strings.Contains(w, "times differ") }) {
		t.Errorf("no warning names the unequal times: %v", r.Warnings)
	}
}
