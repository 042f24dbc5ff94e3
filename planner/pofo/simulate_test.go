package pofo

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/testchains"
)

// parseOps reads "Fck1 Fall2 Fnone3 B3" into operations.
func parseOps(tb testing.TB, s string) []chainplan.Op {
	tb.Helper()
	kinds := map[string]chainplan.OpKind{"Fall": chainplan.FAll, "Fck": chainplan.FCk, "Fnone": chainplan.FNone, "B": chainplan.B}
	var ops []chainplan.Op
	for _, f := range strings.Fields(s) {
		i := strings.IndexAny(f, "0123456789")
		k, ok := kinds[f[:i]]
		st, err := strconv.Atoi(f[i:])
		if !ok || err != nil {
			tb.Fatalf("bad op %q", f)
		}
		ops = append(ops, chainplan.Op{Kind: k, Stage: st})
	}
	return ops
}

// xf builds a transfer of the §5.8 chain at scale 1.
func xf(dir chainplan.TransferDir, name string, bytes int64, anchor int) chainplan.Transfer {
	t, err := chainplan.ParseTensor(name)
	if err != nil {
		panic(err)
	}
	return chainplan.Transfer{Dir: dir, Tensor: t, Bytes: bytes, Anchor: anchor}
}

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
			s := Schedule{Compute: parseOps(t, tt.ops), Transfers: tt.xfers, SyncAtLoss: true}
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
