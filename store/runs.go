package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/chainplan/chainplan/profile"
)

// Run is the provenance of one stored profile: a row of the runs table.
type Run struct {
	ID         int64     // run_id
	SHA256     string    // content_sha256: hex SHA-256 of the profile file
	SourcePath string    // the path the file was ingested from
	FileBytes  int64     // the file's size
	IngestedAt time.Time // set by Ingest
	// Metadata is the profile's provenance, one column each; Extra is what the
	// metadata_json column holds besides them.
	profile.Metadata
	NumStages  int   // L, set by Ingest from the stages
	HasLoss    bool  // set by Ingest from the stages
	InputBytes int64 // a_0, stage 1's in_bytes, set by Ingest
	// Totals over the stages, the loss included, set by Ingest. TotalSavedBytes is null
	// when a stage's saved_bytes is.
	TotalFwdTimeS   float64
	TotalBwdTimeS   float64
	TotalSavedBytes sql.NullInt64
	TotalParamBytes int64
}

// runColumns are the columns scanRun reads, in order.
const runColumns = `run_id, content_sha256, source_path, file_bytes, ingested_at, format, model_name,
	model_signature, torch_version, device, device_name, dtype, batch_size, input_shape, threads,
	timing_method, warmup_reps, reps, created_at, host, num_stages, has_loss, input_bytes, total_fwd_time_s,
	total_bwd_time_s, total_saved_bytes, total_param_bytes, metadata_json`

// scanRun reads one row of runColumns.
func scanRun(s interface{ Scan(...any) error }) (*Run, error) {
	var r Run
	var ingested, created, shape, meta string
	err := s.Scan(&r.ID, &r.SHA256, &r.SourcePath, &r.FileBytes, &ingested, &r.Format, &r.ModelName,
		&r.ModelSignature, &r.TorchVersion, &r.Device, &r.DeviceName, &r.DType, &r.BatchSize, &shape, &r.Threads,
		&r.TimingMethod, &r.WarmupReps, &r.Reps, &created, &r.Host, &r.NumStages, &r.HasLoss, &r.InputBytes,
		&r.TotalFwdTimeS, &r.TotalBwdTimeS, &r.TotalSavedBytes, &r.TotalParamBytes, &meta)
	if err != nil {
		return nil, err
	}
	if r.IngestedAt, err = parseTime(ingested); err != nil {
		return nil, err
	}
	if r.CreatedAt, err = parseTime(created); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(shape), &r.InputShape); err != nil {
		return nil, fmt.Errorf("run %d: bad input_shape %q: %w", r.ID, shape, err)
	}
	var kv map[string]string
	if err := json.Unmarshal([]byte(meta), &kv); err != nil {
		return nil, fmt.Errorf("run %d: bad metadata_json: %w", r.ID, err)
	}
	r.SetExtra(kv)
	return &r, nil
}

// RunFilter selects runs for Runs. The zero value selects every run; each field set
// narrows the selection.
type RunFilter struct {
	ModelName      string // only runs of this model, when not empty
	ModelSignature string // only runs of this model structure (model_signature), when not empty
	DType          string // only runs in this compute dtype, when not empty
	Device         string // only runs on this device ("cuda:0"), when not empty
	TorchVersion   string // only runs of this torch version, when not empty
	LossName       string // only runs whose loss stage has this name, when not empty
	// CallSignature keeps only the runs whose metadata has this call_signature (the digest
	// chainplan.profile writes of the call it measured), when not empty.
	CallSignature string
	// SavedMeasured keeps only the runs whose every stage has its saved size measured,
	// which a chain needs (chainplan.record profiles may lack it).
	SavedMeasured bool
	Limit         int // at most this many runs, when positive
}

// Runs returns the runs f selects, newest first (by created_at, then run_id).
func (db *DB) Runs(ctx context.Context, f RunFilter) ([]*Run, error) {
	var where []string
	var args []any
	for _, c := range []struct{ cond, value string }{
		{"model_name = ?", f.ModelName},
		{"model_signature = ?", f.ModelSignature},
		{"dtype = ?", f.DType},
		{"device = ?", f.Device},
		{"torch_version = ?", f.TorchVersion},
		{"EXISTS (SELECT 1 FROM stages s WHERE s.run_id = runs.run_id AND s.stage_kind = 'loss' AND s.stage_name = ?)",
			f.LossName},
		{"json_extract(metadata_json, '$." + profile.KeyCallSignature + "') = ?", f.CallSignature},
	} {
		if c.value != "" {
			where = append(where, c.cond)
			args = append(args, c.value)
		}
	}
	if f.SavedMeasured {
		where = append(where, "total_saved_bytes IS NOT NULL")
	}
	q := "SELECT " + runColumns + " FROM runs"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY created_at DESC, run_id DESC"
	if f.Limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", f.Limit)
	}
	rows, err := db.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	defer rows.Close()
	var out []*Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	return out, nil
}

// Run returns run id, or an error wrapping chainplan.ErrNotFound.
func (db *DB) Run(ctx context.Context, id int64) (*Run, error) {
	r, err := scanRun(db.queryRow(ctx, "SELECT "+runColumns+" FROM runs WHERE run_id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("no run %d in %s", id, db.where)
	}
	if err != nil {
		return nil, fmt.Errorf("read run %d: %w", id, err)
	}
	return r, nil
}

// LatestRunID returns the id of the newest run (by created_at, then run_id), or an error
// wrapping chainplan.ErrNotFound when the database holds none.
func (db *DB) LatestRunID(ctx context.Context) (int64, error) {
	var id int64
	err := db.queryRow(ctx, "SELECT run_id FROM runs ORDER BY created_at DESC, run_id DESC LIMIT 1").Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, notFound("no runs in %s (ingest a profile first)", db.where)
	}
	if err != nil {
		return 0, fmt.Errorf("read latest run: %w", err)
	}
	return id, nil
}
