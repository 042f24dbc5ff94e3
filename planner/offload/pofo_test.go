package offload

import (
	"errors"
	"fmt"
	"github.com/chainplan/chainplan/internal/racedetect"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/testchains"
	"github.com/chainplan/chainplan/planner/offload/internal/units"
	"github.com/chainplan/chainplan/planner/rotor"
)

// exactValue runs the continuous POFO DP (spec §4.10 (a)) on c at a budget of m bytes.
func exactValue(c *chainplan.Chain, m, beta float64, noOffload bool) (*table, float64) {
	tb := newTable(units.Exact(c), m, beta, true, noOffload)
	return tb, tb.solveValue()
}

// TestPOFOSpecVectors checks the POFO columns of the regression table of spec §5.8 in exact
// arithmetic. The chain is scaled by 2 so that the budget 15.5 is whole bytes; β scales
// with it.
func TestPOFOSpecVectors(t *testing.T) {
	c := testchains.PofoExample(2)
	inf := math.Inf(1)
	tests := []struct {
		m, beta1, beta4 float64
	}{
		{25, 19, 19}, {24, 19, 19}, {22, 20, 19.25}, {20, 21, 19.75},
		{18, 22, 20.25}, {17, 23, 20.5}, {16, 25, 22.75}, {15.5, inf, inf},
	}
	for _, tt := range tests {
		for _, bw := range []struct {
			beta, want float64
		}{{1, tt.beta1}, {4, tt.beta4}} {
			_, got := exactValue(c, 2*tt.m, 2*bw.beta, false)
			if got != bw.want && math.Abs(got-bw.want) > 1e-9 {
				t.Errorf("POFO(M=%v, β=%v) = %v, want %v", tt.m, bw.beta, got, bw.want)
			}
		}
	}
	// REMAT column (spec §5.8): POFO without offloading.
	remat := map[float64]float64{25: 19, 24: 20, 22: 22, 20: 22, 18: 22, 17: inf}
	for m, want := range remat {
		if _, got := exactValue(c, 2*m, 2, true); got != want {
			t.Errorf("POFO without offloading (M=%v) = %v, want %v", m, got, want)
		}
	}
}

// TestPOFOSpecSchedule checks the reconstruction against the example schedule of spec
// §5.8 (POFO, M = 22, β = 1).
func TestPOFOSpecSchedule(t *testing.T) {
	c := testchains.PofoExample(1)
	tb, v := exactValue(c, 22, 1, false)
	if v != 20 {
		t.Fatalf("value %v, want 20", v)
	}
	s := tb.schedule(units.Exact(c))
	if got, want := chainplan.FormatSequence(s.Compute), chainplan.FormatSequence(testchains.Ops("Fck1 Fall2 Fall3 Fall4 Fall5 B5 B4 B3 B2 Fall1 B1")); got != want {
		t.Fatalf("compute %s, want %s", got, want)
	}
	want := []chainplan.Transfer{testchains.Transfer(chainplan.TransferOffload, "a0", 2, -1), testchains.Transfer(chainplan.TransferPrefetch, "a0", 2, 9)}
	if len(s.Transfers) != 2 || s.Transfers[0] != want[0] || s.Transfers[1] != want[1] {
		t.Fatalf("transfers %v, want %v", s.Transfers, want)
	}
}

// randomPofoCase draws a small random chain, a budget between its input and just above its
// store-all peak, and a bandwidth.
func randomPofoCase(rng *rand.Rand) (*chainplan.Chain, float64, float64) {
	opts := testchains.RandomOptions{MaxSize: 8, MaxOverhead: 3}
	if rng.IntN(4) == 0 {
		opts.MaxOverhead = -1 // no overheads
	}
	if rng.IntN(3) == 0 {
		opts.Float = true
	}
	c := testchains.Random(rng, 1+rng.IntN(6), opts)
	peak := units.Exact(c).StoreAllPeak()
	m := float64(int64(c.InputBytes) + rng.Int64N(int64(peak)-c.InputBytes+2))
	beta := float64(1+rng.IntN(6)) / float64(1+rng.IntN(2))
	return c, m, beta
}

// TestPOFOMatchesSimulator checks spec §4.11 [V] on thousands of random chains: in exact
// arithmetic the DP value is the fractional makespan the simulator finds for the DP's own
// schedule; the schedule is valid in both memory models, and the integral makespan is never
// smaller (releases come later, reservations earlier).
func TestPOFOMatchesSimulator(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	feasible := 0
	for i := 0; i < randomCount(); i++ {
		c, m, beta := randomPofoCase(rng)
		ex := units.Exact(c)
		tb, v := exactValue(c, m, beta, false)
		if math.IsInf(v, 1) {
			continue
		}
		feasible++
		s := tb.schedule(ex)
		fr := Replay(ex, s, SimOptions{BandwidthBytesPerS: beta, LimitBytes: int64(m), Model: chainplan.Fractional})
		in := Replay(ex, s, SimOptions{BandwidthBytesPerS: beta, LimitBytes: int64(m), Model: chainplan.Integral})
		if !fr.Valid || !in.Valid {
			t.Fatalf("chain %d (M=%v β=%v): schedule invalid: %v / %v", i, m, beta, fr.Err(), in.Err())
		}
		if math.Abs(fr.Makespan-v) > 1e-9*v {
			t.Fatalf("chain %d (M=%v β=%v): DP %v, simulated %v\n%v", i, m, beta, v, fr.Makespan, s)
		}
		if in.Makespan < fr.Makespan-1e-9*v {
			t.Fatalf("chain %d: integral makespan %v below fractional %v", i, in.Makespan, fr.Makespan)
		}
		if float64(fr.PeakBytes) > m || float64(in.PeakBytes) > m {
			t.Fatalf("chain %d: peaks %v / %v over %v", i, fr.PeakBytes, in.PeakBytes, m)
		}
	}
	if feasible < randomCount()/4 {
		t.Fatalf("only %d feasible cases", feasible)
	}
}

// TestPOFOWithoutOffloadIsRotor checks the reduction of spec §4.8/§4.12.1: with offloading
// disabled POFO is the persistent rematerialization DP, exactly, both in exact bytes and at
// rotor's discretization; with offloading it is never worse.
func TestPOFOWithoutOffloadIsRotor(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for i := 0; i < randomCount(); i++ {
		c, m, beta := randomPofoCase(rng)
		want := math.Inf(1)
		if p, err := rotor.Solve(c, int64(m), rotor.Options{Slots: -1}); err == nil {
			want = p.Makespan
		} else if !errors.Is(err, chainplan.ErrInfeasible) {
			t.Fatal(err)
		}
		_, got := exactValue(c, m, beta, true)
		if !(got == want || math.Abs(got-want) <= 1e-9*want) {
			t.Fatalf("chain %d (M=%v): no-offload POFO %v, rotor %v", i, m, got, want)
		}
		if _, v := exactValue(c, m, beta, false); v > got+1e-9*got {
			t.Fatalf("chain %d (M=%v β=%v): POFO %v worse than rotor %v", i, m, beta, v, got)
		}
	}
	// Discretized: rounding every size up like rotor gives rotor's value at the same slots.
	// Only feasible tables are compared: rotor's smallest-budget search, which an
	// infeasible budget triggers, does not terminate at some small slot counts.
	rng = rand.New(rand.NewPCG(15, 16))
	compared := 0
	for i := 0; i < randomCount()/8; i++ {
		c := testchains.Random(rng, 1+rng.IntN(6), testchains.RandomOptions{MaxSize: 1000, MaxOverhead: 300})
		peak := rotor.StoreAllPeak(c)
		b := peak/2 + rng.Int64N(peak/2)
		slots := int64(10 + rng.IntN(20))
		tb := rotorTable(c, b, slots, 1, true)
		tb.fill()
		got := tb.solveValue()
		if math.IsInf(got, 1) {
			continue
		}
		p, err := rotor.Solve(c, b, rotor.Options{Slots: slots})
		if err != nil {
			t.Fatalf("chain %d (budget %d, %d slots): table %v, rotor: %v", i, b, slots, got, err)
		}
		if !(got == p.Makespan || math.Abs(got-p.Makespan) <= 1e-9*got) {
			t.Fatalf("chain %d (budget %d, %d slots): no-offload table %v, rotor %v", i, b, slots, got, p.Makespan)
		}
		compared++
	}
	if compared < randomCount()/40 {
		t.Fatalf("only %d discretized cases compared", compared)
	}
}

// TestPOFOVersusOffloadOnly checks spec §4.12.6: POFO's space contains every offload-only
// schedule synchronized at the loss that leaves the loss input on the GPU (POFO never
// offloads it, L2248), so POFO is never worse than such a schedule at the same budget and
// bandwidth. The schedules are DYNPROG's choices of offloads (Solve in exact
// bytes), timed synchronized and valued by the simulator: with fractional link capacities
// DYNPROG's own value can be optimistic (see planner/offload/dynprog_test.go).
func TestPOFOVersusOffloadOnly(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	compared := 0
	for i := 0; i < randomCount(); i++ {
		c, m, beta := randomPofoCase(rng)
		ex := units.Exact(c)
		p, err := SolveDynProg(c, int64(m), Options{BandwidthBytesPerS: beta, Slots: -1})
		if err != nil {
			continue
		}
		off := make([]bool, ex.N)
		for _, tr := range p.Offload.Transfers {
			off[tr.Tensor.Stage] = true
		}
		if off[ex.N-1] {
			continue
		}
		r := Replay(ex, StoreAll(ex, off, true), SimOptions{BandwidthBytesPerS: beta, LimitBytes: int64(m), Model: chainplan.Fractional})
		if !r.Valid {
			continue
		}
		dv := r.Makespan
		_, v := exactValue(c, m, beta, false)
		if v > dv+1e-9*dv {
			t.Fatalf("chain %d (M=%v β=%v): POFO %v worse than synchronized DYNPROG %v (offloads %v)", i, m, beta, v, dv, off)
		}
		compared++
	}
	if compared < randomCount()/8 {
		t.Fatalf("only %d cases compared", compared)
	}
}

// TestPOFOInfiniteBandwidth checks spec §4.12.2 at a link fast enough to hide every
// transfer: whenever each operation fits with only its own input on the GPU (the store-all
// peak of the forward phase can be streamed out), POFO costs Σ(u_F+u_B), up to the
// transfer times. Times are positive so that the link always has time to work.
func TestPOFOInfiniteBandwidth(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	checked := 0
	for i := 0; i < randomCount()/2; i++ {
		c := testchains.Random(rng, 1+rng.IntN(6), testchains.RandomOptions{MaxSize: 8})
		for j := range c.Stages {
			c.Stages[j].FwdTime++
			c.Stages[j].BwdTime++
		}
		c.Loss.FwdTime++
		ex := units.Exact(c)
		// M_stream: every stage with its input and its own needs; the loss input stays.
		var stream float64
		for l := 1; l <= ex.N; l++ {
			stream = max(stream, ex.RFall(l)+ex.ABar[l-1], ex.RB(l)+ex.ABar[l-1])
		}
		m := math.Ceil(stream) + float64(rng.IntN(3))
		const beta = 1e9
		_, v := exactValue(c, m, beta, false)
		sum := ex.SumTime()
		if math.IsInf(v, 1) || v > sum*(1+1e-6) {
			t.Fatalf("chain %d (M=%v, stream %v): POFO %v, want Σ = %v", i, m, stream, v, sum)
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("nothing checked")
	}
}

// TestPOFOMonotone checks the expectation of spec §4.12.5 (not proven in the thesis): POFO
// does not get slower with more memory or a faster link.
func TestPOFOMonotone(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	for i := 0; i < randomCount()/2; i++ {
		c, m, beta := randomPofoCase(rng)
		_, v := exactValue(c, m, beta, false)
		_, vm := exactValue(c, m+1, beta, false)
		_, vb := exactValue(c, m, beta*1.5, false)
		if vm > v+1e-9*vm || vb > v+1e-9*vb {
			t.Fatalf("chain %d (M=%v β=%v): %v, with M+1 %v, with 1.5β %v", i, m, beta, v, vm, vb)
		}
	}
}

// TestSolveReplays runs the exported SolvePOFO at its default and at coarse discretizations:
// every plan replays, fits the budget and reports the simulator's makespan; the DP value,
// with its conservative rounding, is never below the fractional makespan (spec §4.9,
// §5.7); infeasible budgets report a smallest budget that works.
func TestSolveReplays(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	n := 100
	switch {
	case testing.Short() && raceEnabled:
		n = 8
	case testing.Short():
		n = 16
	}
	for i := 0; i < n; i++ {
		c := testchains.Random(rng, 2+rng.IntN(7), testchains.RandomOptions{MaxSize: 1 << 20, MaxOverhead: 1 << 18, Float: true})
		peak := rotor.StoreAllPeak(c)
		lo := LowBudget(c)
		b := lo*4/5 + rng.Int64N(peak-lo*4/5+1)
		var mean float64
		for _, s := range c.Stages {
			mean += float64(s.SavedBytes) / (s.FwdTime + 0.1)
		}
		beta := mean / float64(len(c.Stages)) * (0.2 + 2*rng.Float64())
		slots := []int64{0, 20, 30, 40}[i%4]
		if raceEnabled && slots == 0 {
			slots = 50 // the default grid (up to 243 slots on short chains) takes minutes raced
		}
		opts := Options{BandwidthBytesPerS: beta, Slots: slots}
		p, err := SolvePOFO(c, b, opts)
		if err != nil {
			var ie *chainplan.InfeasibleError
			if !errors.As(err, &ie) || ie.MinBudgetBytes <= b {
				t.Fatalf("chain %d budget %d: %v", i, b, err)
			}
			if _, err := SolvePOFO(c, ie.MinBudgetBytes, opts); err != nil {
				t.Fatalf("chain %d: the smallest budget %d fails: %v", i, ie.MinBudgetBytes, err)
			}
			continue
		}
		r, err := Simulate(c, ScheduleOf(p), SimOptions{BandwidthBytesPerS: beta, LimitBytes: b})
		if err != nil || !r.Valid {
			t.Fatalf("chain %d: plan does not replay: %v %v", i, err, r.Err())
		}
		if r.Makespan != p.Makespan || r.PeakBytes != p.PeakBytes || p.PeakBytes > b {
			t.Fatalf("chain %d: plan says %v/%d, replay %v/%d, budget %d", i, p.Makespan, p.PeakBytes, r.Makespan, r.PeakBytes, b)
		}
		if p.Makespan < c.SumTime()*(1-1e-12) {
			t.Fatalf("chain %d: makespan %v below Σ %v", i, p.Makespan, c.SumTime())
		}
		if b < peak {
			tb := pofoTable(c, b, opts.SlotsFor(b, POFOSlots(c.Len())), beta, false)
			tb.fill()
			if v := tb.solveValue(); v < p.Makespan*(1-1e-9) {
				t.Fatalf("chain %d: DP value %v below the simulated %v", i, v, p.Makespan)
			}
		}
	}
}

// TestSolveFastLink plans the tiny example chain (bytes in the tens, seconds per stage)
// over links so fast that a transfer lasts 10⁻⁸ s or less, shorter than the time tolerance
// of the simulator: from the smallest feasible budget to just below the store-all peak,
// the plan replays and its peak fits. The memory tolerance once ignored the rounding of the
// times and rejected POFO's own schedule at 1 GB/s for being 4·10⁻⁶ bytes over.
func TestSolveFastLink(t *testing.T) {
	c := tinyChain(t)
	betas := []float64{1e9, 1e12}
	if testing.Short() {
		betas = betas[:1]
	}
	for _, beta := range betas {
		opts := Options{BandwidthBytesPerS: beta}
		lo, err := MinBudgetPOFO(c, opts)
		if err != nil {
			t.Fatal(err)
		}
		peak := rotor.StoreAllPeak(c)
		budgets := []int64{lo, lo + 1, (lo + peak) / 2, peak - 1}
		if racedetect.Enabled { // each solve takes seconds under the detector
			budgets = []int64{lo, peak - 1}
		}
		for _, b := range budgets {
			p, err := SolvePOFO(c, b, opts)
			if err != nil {
				t.Fatalf("β %g budget %d: %v", beta, b, err)
			}
			if p.PeakBytes > b {
				t.Fatalf("β %g budget %d: peak %d", beta, b, p.PeakBytes)
			}
		}
	}
}

// TestSolveRefusesHugeTables: a grid whose tables would need gigabytes is refused with a
// *chainplan.SizeError naming the default, before any allocation; the default grid is
// accepted.
func TestSolveRefusesHugeTables(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	c := testchains.Random(rng, 30, testchains.RandomOptions{MaxSize: 1 << 20, MaxOverhead: 1 << 18})
	b := (LowBudget(c) + rotor.StoreAllPeak(c)) / 2
	for _, slots := range []int64{2000, -1} {
		_, err := SolvePOFO(c, b, Options{BandwidthBytesPerS: 1e6, Slots: slots})
		want := fmt.Sprintf("use fewer slots (the default for this chain is %d;", POFOSlots(c.Len()))
		var se *chainplan.SizeError
		if !errors.As(err, &se) || !errors.Is(err, chainplan.ErrUnsupported) || !strings.Contains(err.Error(), want) {
			t.Fatalf("slots %d: %v", slots, err)
		}
		if _, err := MinBudgetPOFO(c, Options{BandwidthBytesPerS: 1e6, Slots: slots}); !errors.Is(err, chainplan.ErrUnsupported) {
			t.Fatalf("MinBudgetPOFO, slots %d: %v", slots, err)
		}
	}
	if err := checkTableSize(c, b, POFOSlots(c.Len())); err != nil {
		t.Fatal(err)
	}
}

// TestInfeasibleNeverSolvesTheSameBudgetAgain: when the smallest-budget search names the
// very budget the solver refused, Infeasible refuses it instead of solving there again
// (which came back to Infeasible for ever: SolvePOFO at 1 TB/s on the tiny chain, where
// the heuristics' searches once named 97 bytes below the 100 every operation needs).
func TestInfeasibleNeverSolvesTheSameBudgetAgain(t *testing.T) {
	c := tinyChain(t)
	solves := 0
	refuse := func(*chainplan.Chain, int64, Options) (*chainplan.Plan, error) {
		solves++
		return nil, &chainplan.InfeasibleError{Algo: "test"}
	}
	p, err := Infeasible(c, "test", 97, Options{}, time.Now(), func() (int64, error) { return 97, nil }, refuse)
	var ie *chainplan.InfeasibleError
	if p != nil || !errors.As(err, &ie) || solves != 0 {
		t.Fatalf("got plan %v, error %v after %d solves; want an InfeasibleError and no solve", p, err, solves)
	}
	opts := Options{BandwidthBytesPerS: 1e12}
	lo, err := MinBudgetPOFO(c, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := SolvePOFO(c, lo, opts); err != nil {
		t.Fatalf("the smallest budget %d at 1 TB/s: %v", lo, err)
	}
}

// tinyChain reads examples/tiny.json, the chain of bytes in the tens and seconds per stage.
func tinyChain(t *testing.T) *chainplan.Chain {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "examples", "tiny.json"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := chainplan.ParseChain(data)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
