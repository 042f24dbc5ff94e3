package offload

import (
	"errors"
	"math"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/testchains"
)

// TestTrace traces spec §5.8's POFO schedule at M = 22, β = 1 in both memory models: the
// samples run in time order from 0 to the makespan, their largest value is the checker's
// peak, and the offload of a0 lowers the memory while it runs only in the fractional model.
func TestTrace(t *testing.T) {
	c := testchains.PofoExample(1)
	off, pre := chainplan.TransferOffload, chainplan.TransferPrefetch
	s := Schedule{Compute: testchains.Ops("Fck1 Fall2 Fall3 Fall4 Fall5 B5 B4 B3 B2 Fall1 B1"),
		Transfers: []chainplan.Transfer{xf(off, "a0", 2, -1), xf(pre, "a0", 2, 9)}, SyncAtLoss: true}
	for _, model := range []chainplan.MemoryModel{chainplan.Fractional, chainplan.Integral} {
		t.Run(string(model), func(t *testing.T) {
			opts := SimOptions{BandwidthBytesPerS: 1, LimitBytes: 22, Model: model}
			r, err := Simulate(c, s, opts)
			if err != nil || !r.Valid {
				t.Fatalf("simulate: %v %v", err, r.Err())
			}
			samples, rep, err := Trace(c, s, *r.Timing, opts)
			if err != nil {
				t.Fatal(err)
			}
			top := 0.0
			for i, x := range samples {
				if i > 0 && x.Time < samples[i-1].Time-1e-9 {
					t.Fatalf("sample %d at %g comes before %g", i, x.Time, samples[i-1].Time)
				}
				top = math.Max(top, x.Bytes)
			}
			if samples[0].Time != 0 || !near(samples[len(samples)-1].Time, rep.Makespan) {
				t.Errorf("samples from %g to %g, want 0 to the makespan %g", samples[0].Time, samples[len(samples)-1].Time, rep.Makespan)
			}
			if int64(math.Round(top)) != rep.PeakBytes {
				t.Errorf("largest sample %g, the checker's peak %d", top, rep.PeakBytes)
			}
			// a0 (2 bytes) leaves over [0, 2]: F_ck 1 runs in [0, 1] with a0, a1 and its
			// overhead, and sees the memory fall as a0 goes (linearly, fractional model) or
			// not before the offload completes (integral).
			// Its window gives the first two samples, at 0 and 1 (no breakpoint inside).
			begin, end := samples[0], samples[1]
			if begin.Time != 0 || end.Time != 1 {
				t.Fatalf("F_ck 1's window sampled at %g and %g, want 0 and 1", begin.Time, end.Time)
			}
			if fell := end.Bytes < begin.Bytes; fell != (model == chainplan.Fractional) {
				t.Errorf("memory over F_ck 1: %g then %g; want it to fall only in the fractional model", begin.Bytes, end.Bytes)
			}
		})
	}
}

// TestTraceInvalid refuses a timing the checker rejects.
func TestTraceInvalid(t *testing.T) {
	c := testchains.PofoExample(1)
	s := Schedule{Compute: testchains.Ops("Fck1 Fck2 Fall3 Fall4 Fall5 B5 B4 B3 Fall2 B2 Fall1 B1"), SyncAtLoss: true}
	tm := chainplan.Timing{ComputeStart: make([]float64, 12)} // every operation at 0: overlaps
	if _, _, err := Trace(c, s, tm, SimOptions{BandwidthBytesPerS: 1, LimitBytes: -1}); !errors.Is(err, chainplan.ErrInvalidPlan) {
		t.Fatalf("got %v, want ErrInvalidPlan", err)
	}
}
