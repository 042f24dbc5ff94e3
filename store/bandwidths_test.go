package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/store"
)

func TestBandwidths(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		ctx := context.Background()
		db := b.open(t)
		if err := db.RecordBandwidth(ctx, &store.Bandwidth{RunID: 1, BytesPerS: 1e9}); !errors.Is(err, chainplan.ErrNotFound) {
			t.Fatalf("bandwidth of a missing run: %v", err)
		}
		res := mustIngest(t, db, sampleProfile(1, 3, 2))
		runID := res.RunID
		if _, ok, err := db.LatestBandwidth(ctx, runID); ok || err != nil {
			t.Fatalf("no bandwidth yet: ok=%v err=%v", ok, err)
		}
		for _, bad := range []float64{0, -1} {
			if err := db.RecordBandwidth(ctx, &store.Bandwidth{RunID: runID, BytesPerS: bad}); err == nil {
				t.Fatalf("accepted bandwidth %v", bad)
			}
		}
		t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		for i, bps := range []float64{12e9, 24e9} {
			b := &store.Bandwidth{RunID: runID, BytesPerS: bps, Device: "cuda:0", Method: "pinned copy",
				MeasuredAt: t0.Add(time.Duration(i) * time.Hour)}
			if err := db.RecordBandwidth(ctx, b); err != nil {
				t.Fatal(err)
			}
		}
		if got, ok, err := db.LatestBandwidth(ctx, runID); !ok || err != nil || got != 24e9 {
			t.Fatalf("LatestBandwidth = %v, %v, %v; want 24e9", got, ok, err)
		}
	})
}

// A link row (schema version 7) is read by LinkBandwidths, newest first, and not by
// LatestBandwidth (pofo's host-device copies); a link of no known kind is refused.
func TestLinkBandwidths(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		ctx := context.Background()
		db := b.open(t)
		runID := mustIngest(t, db, sampleProfile(1, 3, 2)).RunID
		t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		for i, bw := range []store.Bandwidth{
			{BytesPerS: 12e9, Device: "cuda:0", Method: "pinned copy"},
			{BytesPerS: 3e9, Device: "A100", Method: "all-reduce", Link: store.LinkIntra},
		} {
			bw.RunID, bw.MeasuredAt = runID, t0.Add(time.Duration(i)*time.Hour)
			if err := db.RecordBandwidth(ctx, &bw); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.RecordBandwidth(ctx, &store.Bandwidth{RunID: runID, BytesPerS: 1e9, Link: "nvlink"}); err == nil {
			t.Fatal("accepted link kind nvlink")
		}
		if got, ok, err := db.LatestBandwidth(ctx, runID); !ok || err != nil || got != 12e9 {
			t.Fatalf("LatestBandwidth = %v, %v, %v; want the host row's 12e9", got, ok, err)
		}
		rows, err := db.LinkBandwidths(ctx, runID)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 2 || rows[0].Link != store.LinkIntra || rows[0].BytesPerS != 3e9 || rows[0].Device != "A100" ||
			rows[1].Link != store.LinkHost || rows[0].ID == 0 || !rows[0].MeasuredAt.Equal(t0.Add(time.Hour)) {
			t.Fatalf("LinkBandwidths = %+v", rows)
		}
	})
}
