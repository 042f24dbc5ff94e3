package offload

import (
	"errors"
	"github.com/chainplan/chainplan/internal/racedetect"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/testchains"
	"github.com/chainplan/chainplan/planner/offload/internal/units"
)

// randomCount is the number of random chains of the property tests; -short keeps
// thousands.
func randomCount() int {
	if testing.Short() {
		return racedetect.Scale(2000)
	}
	return racedetect.Scale(8000)
}

// dynValue runs Algorithm 5 in exact bytes.
func dynValue(c *chainplan.Chain, m, beta float64, cheap bool) ([]bool, float64, bool) {
	return newDynChain(units.Exact(c), int64(m), -1, beta).table(cheap)
}

// TestDynprogSpecVectors checks the DYNPROG and LB columns of spec §5.8 (chain scaled by 2).
func TestDynprogSpecVectors(t *testing.T) {
	c := testchains.PofoExample(2)
	inf := math.Inf(1)
	tests := []struct {
		m                                      float64
		cheap1, full1, cheap4, full4, lb1, lb4 float64
	}{
		{25, 19, 19, 19, 19, 19, 19},
		{24, 19, 19, 19, 19, 19, 19},
		{22, 21.5, 20, 19.25, 19.25, 19, 19},
		{20, 23.5, 22, 19.75, 19.75, 19, 19},
		{18, 25.5, 24, 20.25, 20.25, 19, 19},
		{17, 26.5, 26, 20.5, 20.5, 19, 19},
		{16, inf, inf, inf, inf, 19, 19},
		{15.5, inf, inf, inf, inf, 19, 19},
	}
	for _, tt := range tests {
		for _, v := range []struct {
			beta  float64
			cheap bool
			want  float64
		}{{1, true, tt.cheap1}, {1, false, tt.full1}, {4, true, tt.cheap4}, {4, false, tt.full4}} {
			_, got, _ := dynValue(c, 2*tt.m, 2*v.beta, v.cheap)
			if got != v.want && math.Abs(got-v.want) > 1e-9 {
				t.Errorf("DYNPROG(M=%v, β=%v, cheap=%v) = %v, want %v", tt.m, v.beta, v.cheap, got, v.want)
			}
		}
		if got := LowerBound(c, int64(2*tt.m), 2); got != tt.lb1 {
			t.Errorf("LB(M=%v, β=1) = %v, want %v", tt.m, got, tt.lb1)
		}
		if got := LowerBound(c, int64(2*tt.m), 8); got != tt.lb4 {
			t.Errorf("LB(M=%v, β=4) = %v, want %v", tt.m, got, tt.lb4)
		}
	}
}

// partitionChain is the 2-Partition instance of Theorem 9 (spec §3.2) with a leading
// stage of size 0: our chain input a_0 is also the gradient δ_0, which the instance sets
// to 0, so the x_i are produced by free stages instead of being the input.
func partitionChain(x []int64) (*chainplan.Chain, float64, float64) {
	var v int64
	for _, xi := range x {
		v += xi
	}
	v /= 2
	c := &chainplan.Chain{Format: chainplan.ChainFormat}
	for _, xi := range x {
		c.Stages = append(c.Stages, chainplan.Stage{SavedBytes: xi})
	}
	c.Stages = append(c.Stages,
		chainplan.Stage{},                       // the thesis's stage n: ā_n = 0
		chainplan.Stage{FwdTime: 1, BwdTime: 1}, // stage n+1: u = 1, ā_{n+1} = 0
		chainplan.Stage{SavedBytes: v})          // stage n+2: ā_{n+2} = V, the loss input
	return c, float64(2 * v), float64(v)
}

// TestDynprogPartition checks the unit test of spec §3.2 [V]: on the Theorem 9 instance
// DYNPROG returns exactly 2 for yes-instances and more for no-instances.
func TestDynprogPartition(t *testing.T) {
	tests := []struct {
		x    []int64
		want float64
	}{
		{[]int64{1, 1, 2}, 2}, {[]int64{2, 2, 3, 3}, 2}, {[]int64{3, 1, 1, 2, 3}, 2},
		{[]int64{1, 3}, 3}, {[]int64{1, 1, 1, 5}, 2.5},
	}
	for _, tt := range tests {
		c, m, beta := partitionChain(tt.x)
		if got := units.Exact(c).StoreAllPeak(); got != 1.5*m {
			t.Fatalf("%v: M_peak %v, want 3V = %v", tt.x, got, 1.5*m)
		}
		_, got, ok := dynValue(c, m, beta, false)
		if !ok || math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("%v: DYNPROG %v, want %v", tt.x, got, tt.want)
		}
	}
}

// TestDynprogMatchesSimulator checks spec §3.4.4 [V] with integer times and bandwidth (so
// that the link capacities are exact): the DP value is the simulated fractional makespan of
// its schedule, synchronized (cheap ε_G) or with the smallest junction the simulator
// finds (full ε_G, (3.16)/(3.17)); and LB ≤ full ≤ cheap (spec §4.12.4).
func TestDynprogMatchesSimulator(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for i := 0; i < randomCount(); i++ {
		c := testchains.Random(rng, 1+rng.IntN(7), testchains.RandomOptions{MaxSize: 8})
		ex := units.Exact(c)
		peak := ex.StoreAllPeak()
		m := float64(rng.IntN(int(peak) + 2))
		beta := float64(1 + rng.IntN(4))
		var vals [2]float64
		for j, cheap := range []bool{true, false} {
			off, v, ok := dynValue(c, m, beta, cheap)
			vals[j] = v
			if !ok {
				continue
			}
			r := Replay(ex, StoreAll(ex, off, cheap), SimOptions{BandwidthBytesPerS: beta, LimitBytes: int64(m), Model: chainplan.Fractional})
			if !r.Valid || math.Abs(r.Makespan-v) > 1e-7*v {
				t.Fatalf("chain %d (M=%v β=%v cheap=%v): DP %v, simulated %v (%v), offloads %v", i, m, beta, cheap, v, r.Makespan, r.Err(), off)
			}
		}
		if math.IsInf(vals[0], 1) != math.IsInf(vals[1], 1) || vals[1] > vals[0]+1e-9 {
			t.Fatalf("chain %d: full %v, cheap %v", i, vals[1], vals[0])
		}
		if lb := lowerBound(ex, m, beta); vals[1] < lb-1e-9 {
			t.Fatalf("chain %d: DYNPROG %v below LB %v", i, vals[1], lb)
		}
	}
}

// TestGreedy checks GREEDY (spec §3.3): it offloads the shortest prefix covering
// M_peak − M, its schedule replays, and DYNPROG, optimal over ordered no-wait schedules,
// is never slower in the fractional model.
func TestGreedy(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 34))
	checked := 0
	for i := 0; i < randomCount(); i++ {
		c := testchains.Random(rng, 1+rng.IntN(7), testchains.RandomOptions{MaxSize: 8})
		ex := units.Exact(c)
		peak := ex.StoreAllPeak()
		m := float64(rng.IntN(int(peak) + 2))
		beta := float64(1 + rng.IntN(4))
		s, ok := greedySchedule(ex, m, beta, chainplan.Fractional)
		if !ok {
			continue
		}
		var sum float64
		for j, tr := range s.Transfers[:len(s.Transfers)/2] {
			if tr.Tensor != tensorOf(j, true) {
				t.Fatalf("chain %d: offload %d is %v, not a prefix", i, j, tr.Tensor)
			}
			sum += ex.ABar[j]
		}
		if q := peak - m; sum < q || len(s.Transfers) > 0 && sum-ex.ABar[len(s.Transfers)/2-1] >= q {
			t.Fatalf("chain %d: offloads %v bytes for Q = %v: not the shortest prefix", i, sum, q)
		}
		r := Replay(ex, s, SimOptions{BandwidthBytesPerS: beta, LimitBytes: int64(m), Model: chainplan.Fractional})
		_, dv, ok := dynValue(c, m, beta, false)
		if !ok || dv > r.Makespan+1e-7*dv {
			t.Fatalf("chain %d (M=%v β=%v): DYNPROG %v slower than GREEDY %v", i, m, beta, dv, r.Makespan)
		}
		if lb := lowerBound(ex, m, beta); r.Makespan < lb*(1-1e-7) {
			t.Fatalf("chain %d: GREEDY %v below LB", i, r.Makespan)
		}
		checked++
	}
	if checked < randomCount()/10 {
		t.Fatalf("only %d cases", checked)
	}
}

// TestSolveOffloadReplays runs SolveDynProg and SolveGreedy at their default
// discretization: plans replay within the budget with their reported makespan, and an
// infeasible budget reports a smallest budget that works.
func TestSolveOffloadReplays(t *testing.T) {
	rng := rand.New(rand.NewPCG(35, 36))
	n := 300
	if testing.Short() {
		n = 80
	}
	for i := 0; i < n; i++ {
		c := testchains.Random(rng, 1+rng.IntN(9), testchains.RandomOptions{MaxSize: 1 << 20, MaxOverhead: 1 << 18, Float: true})
		peak := int64(units.Exact(c).StoreAllPeak())
		b := peak/3 + rng.Int64N(peak*2/3)
		opts := Options{BandwidthBytesPerS: float64(1<<20) * (0.5 + 4*rng.Float64())}
		for _, solve := range []func(*chainplan.Chain, int64, Options) (*chainplan.Plan, error){SolveDynProg, SolveGreedy} {
			p, err := solve(c, b, opts)
			if err != nil {
				var ie *chainplan.InfeasibleError
				if !errors.As(err, &ie) || ie.MinBudgetBytes <= b {
					t.Fatalf("chain %d budget %d: %v", i, b, err)
				}
				if _, err := solve(c, ie.MinBudgetBytes, opts); err != nil {
					t.Fatalf("chain %d: the smallest budget %d fails: %v", i, ie.MinBudgetBytes, err)
				}
				continue
			}
			r, err := Simulate(c, ScheduleOf(p), SimOptions{BandwidthBytesPerS: opts.BandwidthBytesPerS, LimitBytes: b})
			if err != nil || !r.Valid || r.Makespan != p.Makespan || p.PeakBytes > b {
				t.Fatalf("chain %d %s: plan %v/%d, replay %+v (%v)", i, p.Algo, p.Makespan, p.PeakBytes, r, err)
			}
		}
	}
}

// TestDynprogBump checks the iterative rounding of spec §3.4.5: the optimistic scheme
// rounds some saved sizes down, bump rounds up the one closest to its ceiling, and a
// chain with every value rounded up has none left.
func TestDynprogBump(t *testing.T) {
	c := &units.Chain{N: 3, A: []float64{10, 10, 10, 0}, ABar: []float64{10, 14, 13, 0},
		UF: []float64{0, 1, 1, 1}, UB: []float64{0, 1, 1, 1}, OF: make([]float64, 4), OB: make([]float64, 4)}
	d := newDynChain(c, 40, 4, 1) // unit 10: ā/unit = 1, 1.4, 1.3 → prefix 1, 2.4, 3.7
	if got, want := d.abar[:3], []int64{1, 2, 1}; got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("optimistic ā %v, want %v", got, want)
	}
	// ā_2 = 1.3 units was rounded down to 1; ā_1 = 1.4 was rounded up to 2.
	if !d.bump() || d.abar[2] != 2 || d.bump() {
		t.Fatalf("bump: %v, down %v", d.abar, d.down)
	}
}
