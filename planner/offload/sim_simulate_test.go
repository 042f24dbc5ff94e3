package offload

import (
	"math"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/testchains"
)

// xf builds a transfer of the test vectors.
var xf = testchains.Transfer

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(1, math.Abs(b)) }

// TestSimulateSpecSchedules replays the example schedules of spec §5.8 with their stated
// makespans and timings.
func TestSimulateSpecSchedules(t *testing.T) {
	c := testchains.PofoExample(1)
	off, pre := chainplan.TransferOffload, chainplan.TransferPrefetch
	tests := []struct {
		name       string
		ops        string
		xfers      []chainplan.Transfer
		limit      int64
		beta       float64
		model      chainplan.MemoryModel
		makespan   float64
		start      []float64
		xferStart  []float64
		wantIssues bool
	}{
		{name: "RematM22", ops: "Fck1 Fck2 Fall3 Fall4 Fall5 B5 B4 B3 Fall2 B2 Fall1 B1", limit: 22, beta: 1,
			model: chainplan.Fractional, makespan: 22},
		{name: "RematM21", ops: "Fck1 Fck2 Fall3 Fall4 Fall5 B5 B4 B3 Fall2 B2 Fall1 B1", limit: 21, beta: 1,
			model: chainplan.Fractional, wantIssues: true},
		{name: "PofoM22Beta1", ops: "Fck1 Fall2 Fall3 Fall4 Fall5 B5 B4 B3 B2 Fall1 B1",
			xfers: []chainplan.Transfer{xf(off, "a0", 2, -1), xf(pre, "a0", 2, 9)}, limit: 22, beta: 1,
			model: chainplan.Fractional, makespan: 20,
			start:     []float64{0, 1, 3, 4, 6, 6.5, 7, 11, 13, 17, 18},
			xferStart: []float64{0, 15}},
		{name: "PofoM22Beta1Integral", ops: "Fck1 Fall2 Fall3 Fall4 Fall5 B5 B4 B3 B2 Fall1 B1",
			xfers: []chainplan.Transfer{xf(off, "a0", 2, -1), xf(pre, "a0", 2, 9)}, limit: 22, beta: 1,
			model: chainplan.Integral, makespan: 20,
			start:     []float64{0, 1, 3, 4, 6, 6.5, 7, 11, 13, 17, 18},
			xferStart: []float64{0, 15}},
		{name: "PofoM18Beta4", ops: "Fall1 Fall2 Fall3 Fall4 Fall5 B5 B4 B3 B2 B1",
			xfers: []chainplan.Transfer{xf(off, "a0", 2, -1), xf(off, "abar1", 6, 0), xf(pre, "abar1", 6, 8), xf(pre, "a0", 2, 9)},
			limit: 18, beta: 4, model: chainplan.Fractional, makespan: 20.25,
			start:     []float64{0, 1, 3, 4, 6, 6.5, 7, 11, 14.25, 18.25},
			xferStart: []float64{0, 1, 12.75, 17.75}},
		{name: "PofoM18Beta4Integral", ops: "Fall1 Fall2 Fall3 Fall4 Fall5 B5 B4 B3 B2 B1",
			xfers: []chainplan.Transfer{xf(off, "a0", 2, -1), xf(off, "abar1", 6, 0), xf(pre, "abar1", 6, 8), xf(pre, "a0", 2, 9)},
			limit: 18, beta: 4, model: chainplan.Integral, makespan: 20.5,
			start:     []float64{0, 1, 3, 4, 6, 6.5, 7, 11, 14.5, 18.5},
			xferStart: []float64{0, 1, 13, 18}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Schedule{Compute: testchains.Ops(tt.ops), Transfers: tt.xfers, SyncAtLoss: true}
			r, err := Simulate(c, s, SimOptions{BandwidthBytesPerS: tt.beta, LimitBytes: tt.limit, Model: tt.model})
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantIssues {
				if r.Valid {
					t.Fatalf("accepted an invalid schedule: %+v", r)
				}
				return
			}
			if !r.Valid {
				t.Fatalf("invalid: %v", r.Err())
			}
			if !near(r.Makespan, tt.makespan) {
				t.Fatalf("makespan %v, want %v (timing %+v)", r.Makespan, tt.makespan, r.Timing)
			}
			for k, want := range tt.start {
				if !near(r.Timing.ComputeStart[k], want) {
					t.Fatalf("op %d starts at %v, want %v (all: %v)", k, r.Timing.ComputeStart[k], want, r.Timing.ComputeStart)
				}
			}
			for j, want := range tt.xferStart {
				if !near(r.Timing.TransferStart[j], want) {
					t.Fatalf("transfer %d starts at %v, want %v (all: %v)", j, r.Timing.TransferStart[j], want, r.Timing.TransferStart)
				}
			}
			// The checker accepts the simulator's own timing, and the spec's.
			cr, err := Check(c, s, *r.Timing, SimOptions{BandwidthBytesPerS: tt.beta, LimitBytes: tt.limit, Model: tt.model})
			if err != nil || !cr.Valid || !near(cr.Makespan, r.Makespan) {
				t.Fatalf("check of own timing: %v %+v", err, cr)
			}
		})
	}
}

// TestSimulateInvalid checks that the simulator rejects schedules that break the rules of
// spec §5.2 and §5.5, naming the problem.
func TestSimulateInvalid(t *testing.T) {
	c := testchains.PofoExample(1)
	off, pre := chainplan.TransferOffload, chainplan.TransferPrefetch
	storeAll := "Fall1 Fall2 Fall3 Fall4 Fall5 B5 B4 B3 B2 B1"
	tests := []struct {
		name  string
		ops   string
		xfers []chainplan.Transfer
		limit int64
		want  string
	}{
		{"NeverPrefetched", storeAll, []chainplan.Transfer{xf(off, "a0", 2, -1)}, 30, "never prefetched"},
		{"OffloadInBackward", storeAll, []chainplan.Transfer{xf(off, "abar1", 6, 6)}, 30, "offloads start in the forward phase"},
		{"PrefetchBeforeLoss", storeAll, []chainplan.Transfer{xf(off, "a0", 2, -1), xf(pre, "a0", 2, 3)}, 30, "prefetches end in the backward phase"},
		{"OffloadAfterPrefetch", storeAll, []chainplan.Transfer{xf(off, "a0", 2, -1), xf(pre, "a0", 2, 9), xf(off, "abar1", 6, 0)}, 30, "runs all offloads first"},
		{"WrongBytes", storeAll, []chainplan.Transfer{xf(off, "a0", 3, -1), xf(pre, "a0", 3, 9)}, 30, "the transfer says 3"},
		{"NotStoredYet", storeAll, []chainplan.Transfer{xf(off, "abar2", 3, 0), xf(pre, "abar2", 3, 7)}, 30, "not stored then"},
		{"OffloadedTwice", storeAll, []chainplan.Transfer{xf(off, "a0", 2, -1), xf(off, "a0", 2, 0), xf(pre, "a0", 2, 9)}, 30, "offloaded twice"},
		{"PrefetchTooLate", storeAll, []chainplan.Transfer{xf(off, "abar1", 6, 0), xf(pre, "abar1", 6, 9)}, 30, "read before its prefetch completes"},
		{"PrefetchNotOffloaded", storeAll, []chainplan.Transfer{xf(pre, "abar1", 6, 8)}, 30, "no offloaded copy"},
		{"TooLittleMemory", storeAll, []chainplan.Transfer{xf(off, "a0", 2, -1), xf(pre, "a0", 2, 9)}, 20, "over the limit"},
		{"FNoneFromSaved", "Fall1 Fnone2 Fall3 Fall4 Fall5 B5 B4 B3 B2 B1", nil, 30, "cannot read ā_1"},
		{"LossNotFollowedByBackward", "Fall1 Fall2 Fall3 Fall4 Fall5 B4", nil, 30, "followed at once by B 5"},
		{"LeftoverTensor", "Fall1 Fall2 Fall3 Fall4 Fck5 Fall5 B5 B4 B3 B2 B1", nil, 40, "a5 is still stored at the end"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Schedule{Compute: testchains.Ops(tt.ops), Transfers: tt.xfers, SyncAtLoss: true}
			r, err := Simulate(c, s, SimOptions{BandwidthBytesPerS: 1, LimitBytes: tt.limit})
			if err != nil {
				t.Fatal(err)
			}
			if r.Valid {
				t.Fatalf("accepted: %+v", r)
			}
			if msg := r.Err().Error(); !strings.Contains(msg, tt.want) {
				t.Fatalf("%q does not mention %q", msg, tt.want)
			}
		})
	}
}

// TestCheckTimings perturbs the timing of the spec's POFO schedule (M = 22, β = 1) and
// checks that the checker of spec §5.5 finds each violation.
func TestCheckTimings(t *testing.T) {
	c := testchains.PofoExample(1)
	s := Schedule{Compute: testchains.Ops("Fck1 Fall2 Fall3 Fall4 Fall5 B5 B4 B3 B2 Fall1 B1"),
		Transfers:  []chainplan.Transfer{xf(chainplan.TransferOffload, "a0", 2, -1), xf(chainplan.TransferPrefetch, "a0", 2, 9)},
		SyncAtLoss: true}
	good := func() chainplan.Timing {
		return chainplan.Timing{ComputeStart: []float64{0, 1, 3, 4, 6, 6.5, 7, 11, 13, 17, 18}, TransferStart: []float64{0, 15}}
	}
	tests := []struct {
		name   string
		modify func(*chainplan.Timing)
		model  chainplan.MemoryModel
		want   string
	}{
		{"Valid", func(*chainplan.Timing) {}, chainplan.Integral, ""},
		{"ComputeOverlap", func(tm *chainplan.Timing) { tm.ComputeStart[2] = 2.5 }, chainplan.Fractional, "before the previous operation ends"},
		{"LinkOverlap", func(tm *chainplan.Timing) { tm.TransferStart[1] = 1 }, chainplan.Fractional, "one transfer at a time"},
		{"PrefetchLate", func(tm *chainplan.Timing) { tm.TransferStart[1] = 15.5 }, chainplan.Fractional, "ends after op 9 starts"},
		{"PrefetchBeforeLoss", func(tm *chainplan.Timing) { tm.TransferStart[1] = 5 }, chainplan.Fractional, "OR.3"},
		{"ReadAfterOffload", func(tm *chainplan.Timing) {
			for k := range tm.ComputeStart {
				tm.ComputeStart[k] += 3
			}
			tm.TransferStart[1] += 3
		}, chainplan.Integral, "after its offload"},
		{"OverMemory", func(tm *chainplan.Timing) { tm.TransferStart[1] = 12 }, chainplan.Integral, "over the limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tm := good()
			tt.modify(&tm)
			r, err := Check(c, s, tm, SimOptions{BandwidthBytesPerS: 1, LimitBytes: 22, Model: tt.model})
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == "" {
				if !r.Valid || r.Makespan != 20 || r.PeakBytes > 22 {
					t.Fatalf("valid timing rejected: %+v", r)
				}
				return
			}
			if r.Valid {
				t.Fatalf("accepted: %+v", r)
			}
			if msg := r.Err().Error(); !strings.Contains(msg, tt.want) {
				t.Fatalf("%q does not mention %q", msg, tt.want)
			}
		})
	}
}

// TestSimulateWithoutLimit replays the spec's schedules with no memory limit: the peak is
// the one a limit at the peak reports (the tolerance once scaled with the stand-in for an
// infinite limit and reported a meaningless peak).
func TestSimulateWithoutLimit(t *testing.T) {
	c := testchains.PofoExample(1)
	off, pre := chainplan.TransferOffload, chainplan.TransferPrefetch
	s := Schedule{Compute: testchains.Ops("Fck1 Fall2 Fall3 Fall4 Fall5 B5 B4 B3 B2 Fall1 B1"),
		Transfers: []chainplan.Transfer{xf(off, "a0", 2, -1), xf(pre, "a0", 2, 9)}, SyncAtLoss: true}
	for _, model := range []chainplan.MemoryModel{chainplan.Fractional, chainplan.Integral} {
		free, err := Simulate(c, s, SimOptions{BandwidthBytesPerS: 1, LimitBytes: -1, Model: model})
		if err != nil || !free.Valid {
			t.Fatalf("%s: %v %+v", model, err, free)
		}
		at, err := Simulate(c, s, SimOptions{BandwidthBytesPerS: 1, LimitBytes: free.PeakBytes, Model: model})
		if err != nil || !at.Valid || at.PeakBytes != free.PeakBytes || free.PeakBytes <= 0 {
			t.Errorf("%s: peak without a limit %d; at that limit %+v, %v", model, free.PeakBytes, at, err)
		}
	}
}
