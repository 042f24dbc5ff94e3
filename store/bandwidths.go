package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"time"
)

// Bandwidth is a host-device copy bandwidth measured for a run: a row of the bandwidths
// table.
type Bandwidth struct {
	RunID      int64
	MeasuredAt time.Time // RecordBandwidth uses the current time when zero
	BytesPerS  float64   // > 0
	Device     string
	Method     string
}

// RecordBandwidth stores a measured bandwidth for run b.RunID. Errors: ErrNotFound
// (wrapped) when the run does not exist; a non-positive or non-finite bandwidth.
func (db *DB) RecordBandwidth(ctx context.Context, b *Bandwidth) error {
	if math.IsNaN(b.BytesPerS) || math.IsInf(b.BytesPerS, 0) || b.BytesPerS <= 0 {
		return fmt.Errorf("record bandwidth: %g bytes/s is not a positive, finite bandwidth", b.BytesPerS)
	}
	at := b.MeasuredAt
	if at.IsZero() {
		at = time.Now()
	}
	return db.write(ctx, func(tx txn) error {
		var exists bool
		if err := tx.queryRow(ctx, "SELECT EXISTS (SELECT 1 FROM runs WHERE run_id = ?)", b.RunID).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			return notFound("no run %d in %s", b.RunID, db.where)
		}
		_, err := tx.exec(ctx, `INSERT INTO bandwidths (run_id, measured_at, bandwidth_bytes_per_s, device, method)
			VALUES (?, ?, ?, ?, ?)`, b.RunID, formatTime(at), b.BytesPerS, b.Device, b.Method)
		return err
	})
}

// LatestBandwidth returns the newest bandwidth recorded for a run, and false when none is.
func (db *DB) LatestBandwidth(ctx context.Context, runID int64) (float64, bool, error) {
	var bps float64
	err := db.queryRow(ctx, `SELECT bandwidth_bytes_per_s FROM bandwidths WHERE run_id = ?
		ORDER BY measured_at DESC, bandwidth_id DESC LIMIT 1`, runID).Scan(&bps)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("latest bandwidth of run %d: %w", runID, err)
	}
	return bps, true, nil
}
