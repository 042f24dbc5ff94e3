package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"time"
)

// Advice is one advise or search3d result to store (tables clusters, advice and
// advice_candidates; docs/sql.md): the cluster's canonical document, the request and the
// whole result as JSON, and one row per candidate.
type Advice struct {
	Kind        string        // "advise" or "search3d"
	RunID       sql.NullInt64 // the profile advised on; null for a chain file
	ModelName   string
	ClusterName string
	// ClusterJSON is the cluster's canonical document (cluster.Canonical); clusters are
	// stored once per distinct document.
	ClusterJSON []byte
	NumNodes    int
	NumDevices  int
	Source      string // "cli" or "python"
	RequestJSON []byte
	ResultJSON  []byte
	SolveMS     float64
	Version     string
	Candidates  []AdviceCandidate
	CreatedAt   time.Time // RecordAdvice uses the current time when zero
}

// AdviceCandidate is one row of advice_candidates.
type AdviceCandidate struct {
	Candidate int // position in the result, from 0 (−1: search3d's Megatron pick)
	Rank      int
	Strategy  string
	Devices   int
	// The degrees: search3d's pp, dp, tmp, mbs; advise's data and split degrees. Null
	// where they do not apply.
	PP, DP, TMP, MBS           sql.NullInt64
	DataDegree, SplitDegree    sql.NullInt64
	Feasible                   bool
	IterationTimeS             float64
	EpochTimeS                 sql.NullFloat64
	MemoryBytes, CapacityBytes int64
	DetailJSON                 []byte
}

// RecordAdvice stores an advice, its cluster (once per distinct document) and its
// candidates in one transaction and returns the advice's id. Errors: ErrNotFound (wrapped)
// when RunID names no run.
func (db *DB) RecordAdvice(ctx context.Context, a *Advice) (int64, error) {
	sum := sha256.Sum256(a.ClusterJSON)
	sha := hex.EncodeToString(sum[:])
	at := a.CreatedAt
	if at.IsZero() {
		at = time.Now()
	}
	var id int64
	err := db.write(ctx, func(tx txn) error {
		if a.RunID.Valid {
			var exists bool
			if err := tx.queryRow(ctx, "SELECT EXISTS (SELECT 1 FROM runs WHERE run_id = ?)", a.RunID.Int64).Scan(&exists); err != nil {
				return err
			}
			if !exists {
				return notFound("no run %d in %s", a.RunID.Int64, db.where)
			}
		}
		var clusterID int64
		err := tx.queryRow(ctx, "SELECT cluster_id FROM clusters WHERE content_sha256 = ?", sha).Scan(&clusterID)
		if errors.Is(err, sql.ErrNoRows) {
			if clusterID, err = nextID(ctx, tx, "clusters", "cluster_id"); err != nil {
				return err
			}
			_, err = tx.exec(ctx, `INSERT INTO clusters (cluster_id, content_sha256, name, created_at, num_nodes,
				num_devices, cluster_json) VALUES (?, ?, ?, ?, ?, ?, ?)`, clusterID, sha, a.ClusterName, formatTime(at),
				a.NumNodes, a.NumDevices, string(a.ClusterJSON))
		}
		if err != nil {
			return fmt.Errorf("store cluster: %w", err)
		}
		if id, err = nextID(ctx, tx, "advice", "advice_id"); err != nil {
			return err
		}
		_, err = tx.exec(ctx, `INSERT INTO advice (advice_id, kind, run_id, cluster_id, model_name, created_at,
			source, request_json, result_json, solve_ms, chainplan_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			id, a.Kind, a.RunID, clusterID, a.ModelName, formatTime(at), a.Source, string(a.RequestJSON),
			string(a.ResultJSON), a.SolveMS, a.Version)
		if err != nil {
			return fmt.Errorf("store advice: %w", err)
		}
		return insertRows(ctx, tx, "advice_candidates", `advice_id, candidate, rank, strategy, devices, pp, dp, tmp,
			mbs, data_degree, split_degree, feasible, predicted_iteration_time_s, predicted_epoch_time_s,
			predicted_memory_bytes, capacity_bytes, detail_json`, 17, len(a.Candidates),
			func(i int, dst []any) []any {
				c := &a.Candidates[i]
				return append(dst, id, c.Candidate, c.Rank, c.Strategy, c.Devices, c.PP, c.DP, c.TMP, c.MBS,
					c.DataDegree, c.SplitDegree, flag(c.Feasible), c.IterationTimeS, c.EpochTimeS, c.MemoryBytes,
					c.CapacityBytes, string(c.DetailJSON))
			})
	})
	if err != nil {
		return 0, fmt.Errorf("record advice: %w", err)
	}
	return id, nil
}

// nextID returns max(column) + 1 of table: ids are the writer's, so that the schema needs
// no auto-increment (portable to PostgreSQL); the write transaction makes it unique.
func nextID(ctx context.Context, tx txn, table, column string) (int64, error) {
	var id int64
	if err := tx.queryRow(ctx, "SELECT COALESCE(MAX("+column+"), 0) + 1 FROM "+table).Scan(&id); err != nil {
		return 0, fmt.Errorf("next %s: %w", column, err)
	}
	return id, nil
}

// AdviceMeasurement is a measured run of an advised candidate: a row of
// advice_measurements.
type AdviceMeasurement struct {
	AdviceID       int64
	Candidate      int
	Iterations     int     // ≥ 1
	IterationTimeS float64 // > 0, the mean over iterations 2..n
	PeakBytes      sql.NullInt64
	OutOfMemory    bool
	Host           string
	MetadataJSON   []byte // a JSON object; nil means {}
	CreatedAt      time.Time
}

// RecordAdviceMeasurement stores a measured run and returns its id. Errors: ErrNotFound
// (wrapped) when the advice has no such candidate; a value out of range.
func (db *DB) RecordAdviceMeasurement(ctx context.Context, m *AdviceMeasurement) (int64, error) {
	switch {
	case m.Iterations < 1:
		return 0, fmt.Errorf("record measurement: iterations must be ≥ 1 (got %d)", m.Iterations)
	case math.IsNaN(m.IterationTimeS) || math.IsInf(m.IterationTimeS, 0) || m.IterationTimeS <= 0:
		return 0, fmt.Errorf("record measurement: the iteration time must be a positive number of seconds (got %v)", m.IterationTimeS)
	case m.PeakBytes.Valid && m.PeakBytes.Int64 < 0:
		return 0, fmt.Errorf("record measurement: the peak must be ≥ 0 bytes (got %d)", m.PeakBytes.Int64)
	}
	meta := m.MetadataJSON
	if meta == nil {
		meta = []byte("{}")
	}
	at := m.CreatedAt
	if at.IsZero() {
		at = time.Now()
	}
	var id int64
	err := db.write(ctx, func(tx txn) error {
		var exists bool
		if err := tx.queryRow(ctx, "SELECT EXISTS (SELECT 1 FROM advice_candidates WHERE advice_id = ? AND candidate = ?)",
			m.AdviceID, m.Candidate).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			return notFound("no candidate %d of advice %d in %s", m.Candidate, m.AdviceID, db.where)
		}
		var err error
		if id, err = nextID(ctx, tx, "advice_measurements", "measurement_id"); err != nil {
			return err
		}
		_, err = tx.exec(ctx, `INSERT INTO advice_measurements (measurement_id, advice_id, candidate, created_at,
			iterations, iteration_time_s, peak_bytes, out_of_memory, host, metadata_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			id, m.AdviceID, m.Candidate, formatTime(at), m.Iterations, m.IterationTimeS, m.PeakBytes, flag(m.OutOfMemory),
			m.Host, string(meta))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("record measurement: %w", err)
	}
	return id, nil
}

// StoredAdvice is a stored advice: its kind, run, the request and the result document.
type StoredAdvice struct {
	ID          int64
	Kind        string
	RunID       sql.NullInt64
	ModelName   string
	ClusterName string
	CreatedAt   time.Time
	RequestJSON string
	ResultJSON  string
}

// AdviceByID returns advice id, or an error wrapping ErrNotFound.
func (db *DB) AdviceByID(ctx context.Context, id int64) (*StoredAdvice, error) {
	var a StoredAdvice
	var created string
	err := db.queryRow(ctx, `SELECT a.advice_id, a.kind, a.run_id, a.model_name, c.name, a.created_at,
		a.request_json, a.result_json FROM advice a JOIN clusters c USING (cluster_id) WHERE a.advice_id = ?`, id).Scan(
		&a.ID, &a.Kind, &a.RunID, &a.ModelName, &a.ClusterName, &created, &a.RequestJSON, &a.ResultJSON)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("no advice %d in %s", id, db.where)
	}
	if err != nil {
		return nil, fmt.Errorf("read advice %d: %w", id, err)
	}
	if a.CreatedAt, err = parseTime(created); err != nil {
		return nil, err
	}
	return &a, nil
}

// CandidateAccuracy is one measured candidate of an advice: its prediction and the mean of
// its measured runs (the advice_accuracy view, grouped by candidate).
type CandidateAccuracy struct {
	Candidate         int
	Rank              int
	Strategy          string
	Devices           int
	Feasible          bool
	PredictedS        float64
	MeasuredS         float64 // mean over the runs that did not run out of memory; 0 when none
	Runs              int
	OutOfMemory       int // runs that ran out of memory
	Accuracy          sql.NullFloat64
	PredictedMemory   int64
	MeasuredPeakBytes sql.NullInt64
}

// AdviceAccuracy returns the measured candidates of advice id in candidate order, or an
// error wrapping ErrNotFound when there is no such advice.
func (db *DB) AdviceAccuracy(ctx context.Context, id int64) ([]CandidateAccuracy, error) {
	if _, err := db.AdviceByID(ctx, id); err != nil {
		return nil, err
	}
	rows, err := db.query(ctx, `SELECT candidate, rank, strategy, devices, feasible,
		predicted_iteration_time_s, predicted_memory_bytes,
		COALESCE(AVG(CASE WHEN out_of_memory = 0 THEN measured_iteration_time_s END), 0),
		COUNT(*), SUM(out_of_memory), MAX(measured_peak_bytes)
		FROM advice_accuracy WHERE advice_id = ?
		GROUP BY candidate, rank, strategy, devices, feasible, predicted_iteration_time_s, predicted_memory_bytes
		ORDER BY candidate`, id)
	if err != nil {
		return nil, fmt.Errorf("read accuracy of advice %d: %w", id, err)
	}
	defer rows.Close()
	var out []CandidateAccuracy
	for rows.Next() {
		var c CandidateAccuracy
		if err := rows.Scan(&c.Candidate, &c.Rank, &c.Strategy, &c.Devices, &c.Feasible, &c.PredictedS,
			&c.PredictedMemory, &c.MeasuredS, &c.Runs, &c.OutOfMemory, &c.MeasuredPeakBytes); err != nil {
			return nil, fmt.Errorf("read accuracy of advice %d: %w", id, err)
		}
		if c.MeasuredS > 0 {
			c.Accuracy = sql.NullFloat64{Float64: 1 - math.Abs(c.PredictedS-c.MeasuredS)/c.MeasuredS, Valid: true}
		}
		out = append(out, c)
	}
	return out, rows.Err()
}
