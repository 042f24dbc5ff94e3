package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"time"
)

// The links a bandwidth is measured over (the link column, schema version 7).
const (
	LinkHost  = "host"  // device↔host copies (pofo's bandwidth "auto"); every row stored before version 7
	LinkIntra = "intra" // between two devices of one node
	LinkInter = "inter" // between two nodes
)

// Bandwidth is a bandwidth measured for a run: a row of the bandwidths table. Device is the
// device measured ("cuda:0", "cpu") or, for a link between devices, the cluster's device
// type the link joins (a cluster file's gpu) or the run's device.
type Bandwidth struct {
	ID         int64 // bandwidth_id; set by LinkBandwidths, ignored by RecordBandwidth
	RunID      int64
	MeasuredAt time.Time // RecordBandwidth uses the current time when zero
	BytesPerS  float64   // > 0
	Device     string
	Method     string
	Link       string // LinkHost (when empty), LinkIntra or LinkInter
}

// RecordBandwidth stores a measured bandwidth for run b.RunID. Errors: ErrNotFound
// (wrapped) when the run does not exist; a non-positive or non-finite bandwidth; an
// unknown link.
func (db *DB) RecordBandwidth(ctx context.Context, b *Bandwidth) error {
	if math.IsNaN(b.BytesPerS) || math.IsInf(b.BytesPerS, 0) || b.BytesPerS <= 0 {
		return fmt.Errorf("record bandwidth: %g bytes/s is not a positive, finite bandwidth", b.BytesPerS)
	}
	link := b.Link
	switch link {
	case "":
		link = LinkHost
	case LinkHost, LinkIntra, LinkInter:
	default:
		return fmt.Errorf("record bandwidth: link %q is not one of %s, %s, %s", link, LinkHost, LinkIntra, LinkInter)
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
		_, err := tx.exec(ctx, `INSERT INTO bandwidths (run_id, measured_at, bandwidth_bytes_per_s, device, method, link)
			VALUES (?, ?, ?, ?, ?, ?)`, b.RunID, formatTime(at), b.BytesPerS, b.Device, b.Method, link)
		return err
	})
}

// LatestBandwidth returns the newest host-device bandwidth recorded for a run, and false
// when none is.
func (db *DB) LatestBandwidth(ctx context.Context, runID int64) (float64, bool, error) {
	var bps float64
	err := db.queryRow(ctx, `SELECT bandwidth_bytes_per_s FROM bandwidths WHERE run_id = ? AND link = 'host'
		ORDER BY measured_at DESC, bandwidth_id DESC LIMIT 1`, runID).Scan(&bps)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("latest bandwidth of run %d: %w", runID, err)
	}
	return bps, true, nil
}

// LinkBandwidths returns every bandwidth recorded for a run, of every link, newest first.
// Values are returned as stored (a row written around RecordBandwidth may hold an
// infinity, or on PostgreSQL a NaN): the reader checks them.
func (db *DB) LinkBandwidths(ctx context.Context, runID int64) ([]Bandwidth, error) {
	rows, err := db.query(ctx, `SELECT bandwidth_id, measured_at, bandwidth_bytes_per_s, device, method, link
		FROM bandwidths WHERE run_id = ? ORDER BY measured_at DESC, bandwidth_id DESC`, runID)
	if err != nil {
		return nil, fmt.Errorf("bandwidths of run %d: %w", runID, err)
	}
	defer rows.Close()
	var out []Bandwidth
	for rows.Next() {
		b := Bandwidth{RunID: runID}
		var at string
		if err := rows.Scan(&b.ID, &at, &b.BytesPerS, &b.Device, &b.Method, &b.Link); err != nil {
			return nil, fmt.Errorf("bandwidths of run %d: %w", runID, err)
		}
		if b.MeasuredAt, err = parseTime(at); err != nil {
			return nil, fmt.Errorf("bandwidth %d of run %d: measured_at: %w", b.ID, runID, err)
		}
		out = append(out, b)
	}
	return out, rows.Err()
}
