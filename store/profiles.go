package store

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/chainplan/chainplan/profile"
)

// Profile is what Ingest stores: the run's provenance (ID, IngestedAt, NumStages, HasLoss,
// InputBytes and the totals are set by Ingest), its aggregated stages in index order (the
// stages table), and the raw measurements (the measurements table, which keeps neither
// StageName nor StageKind: the stages say them).
type Profile struct {
	Run          Run
	Stages       []profile.StageSummary
	Measurements []profile.Row
}

// IngestResult says what Ingest did.
type IngestResult struct {
	RunID    int64 // the run the profile is stored as
	Existing bool  // true when a file with the same content was already stored as RunID
	Rows     int   // measurement rows written (0 when Existing)
}

// testHook, when set by a test, is called at named points of an ingest transaction.
var testHook func(point string)

// Ingest stores a profile in one transaction. The run's SHA256 identifies the file: a
// profile whose file was stored before is not stored again, and the result names the
// existing run. Either the whole profile is stored or nothing is.
func (db *DB) Ingest(ctx context.Context, p *Profile) (IngestResult, error) {
	run := p.Run
	if err := checkProfile(p); err != nil {
		return IngestResult{}, fmt.Errorf("ingest: %w", err)
	}
	run.NumStages, run.HasLoss = 0, false
	run.TotalFwdTimeS, run.TotalBwdTimeS, run.TotalParamBytes = 0, 0, 0
	run.TotalSavedBytes = sql.NullInt64{Valid: true}
	for _, s := range p.Stages {
		if s.Kind == profile.KindLoss {
			run.HasLoss = true
		} else {
			run.NumStages++
		}
		run.TotalFwdTimeS += s.FwdTimeS
		run.TotalBwdTimeS += s.BwdTimeS
		run.TotalParamBytes += s.ParamBytes
		run.TotalSavedBytes.Int64 += s.SavedBytes.Int64
		run.TotalSavedBytes.Valid = run.TotalSavedBytes.Valid && s.SavedBytes.Valid
	}
	if !run.TotalSavedBytes.Valid {
		run.TotalSavedBytes.Int64 = 0
	}
	run.InputBytes = p.Stages[0].InBytes
	run.IngestedAt = time.Now()
	shape := run.InputShape
	if shape == nil {
		shape = []int64{}
	}
	shapeJSON, err := json.Marshal(shape)
	if err != nil {
		return IngestResult{}, fmt.Errorf("ingest: %w", err)
	}
	metaJSON, err := json.Marshal(run.Map())
	if err != nil {
		return IngestResult{}, fmt.Errorf("ingest: %w", err)
	}
	var res IngestResult
	err = db.write(ctx, func(tx txn) error {
		res = IngestResult{}
		existing := func() error {
			err := tx.queryRow(ctx, "SELECT run_id FROM runs WHERE content_sha256 = ?", run.SHA256).Scan(&res.RunID)
			if err != nil {
				return err
			}
			res.Existing = true
			return nil
		}
		if err := existing(); !errors.Is(err, sql.ErrNoRows) {
			if err != nil {
				return fmt.Errorf("look up content hash: %w", err)
			}
			return nil
		}
		// Another writer may store the same file between the look-up and the insert (on
		// PostgreSQL, whose writers do not wait for each other until they meet on a row):
		// the insert then waits for that writer and does nothing if it committed, and the
		// run is the other writer's.
		err = tx.queryRow(ctx, `INSERT INTO runs (content_sha256, source_path, file_bytes, ingested_at, format,
			model_name, model_signature, torch_version, device, device_name, dtype, batch_size, input_shape, threads,
			timing_method, warmup_reps, reps, created_at, host, num_stages, has_loss, input_bytes, total_fwd_time_s,
			total_bwd_time_s, total_saved_bytes, total_param_bytes, metadata_json)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (content_sha256) DO NOTHING RETURNING run_id`,
			run.SHA256, run.SourcePath, run.FileBytes, formatTime(run.IngestedAt), run.Format,
			run.ModelName, run.ModelSignature, run.TorchVersion, run.Device, run.DeviceName, run.DType, run.BatchSize,
			string(shapeJSON), run.Threads, run.TimingMethod, run.WarmupReps, run.Reps, formatTime(run.CreatedAt),
			run.Host, run.NumStages, flag(run.HasLoss), run.InputBytes, run.TotalFwdTimeS, run.TotalBwdTimeS,
			run.TotalSavedBytes, run.TotalParamBytes, string(metaJSON)).Scan(&res.RunID)
		if errors.Is(err, sql.ErrNoRows) {
			if err := existing(); err != nil {
				return fmt.Errorf("look up content hash: %w", err)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("insert run: %w", err)
		}
		if err := insertStages(ctx, tx, res.RunID, p.Stages); err != nil {
			return err
		}
		if err := insertStageParallel(ctx, tx, res.RunID, p.Stages); err != nil {
			return err
		}
		n, err := insertMeasurements(ctx, tx, res.RunID, p.Measurements)
		res.Rows = n
		return err
	})
	if err != nil {
		return IngestResult{}, fmt.Errorf("store %s: %w", run.SourcePath, err)
	}
	return res, nil
}

// checkProfile checks what the schema's constraints cannot say well.
func checkProfile(p *Profile) error {
	if b, err := hex.DecodeString(p.Run.SHA256); err != nil || len(b) != 32 {
		return fmt.Errorf("content hash %q is not a hex SHA-256", p.Run.SHA256)
	}
	if len(p.Stages) == 0 {
		return errors.New("the profile has no stages")
	}
	for i, s := range p.Stages {
		if s.Index != i+1 {
			return fmt.Errorf("stage %d is at position %d (stages must be numbered 1..L+1 in order)", s.Index, i+1)
		}
		if s.Kind == profile.KindLoss && i != len(p.Stages)-1 {
			return fmt.Errorf("the loss (stage %d) is not the last stage", s.Index)
		}
	}
	if p.Stages[0].Kind != profile.KindStage {
		return errors.New("the profile has no stage before the loss")
	}
	return nil
}

// batchRows is how many rows one INSERT statement carries: fewer statements, fewer cgo
// calls or round trips, and far below the bound parameters SQLite (32,766) and
// PostgreSQL (65,535) take.
const batchRows = 128

// insertRows inserts n rows of width values each into table with multi-row INSERTs, or
// with the backend's bulk copy (bulk.go) when it has one and the rows fill more than one
// INSERT; values(i, dst) appends row i's values to dst.
func insertRows(ctx context.Context, tx txn, table, columns string, width, n int, values func(i int, dst []any) []any) error {
	if bulk, ok := tx.be.(bulkCopier); ok && n > batchRows {
		cols := columnList(columns)
		if len(cols) != width {
			return fmt.Errorf("insert %s: %d columns named, %d values a row", table, len(cols), width)
		}
		return bulk.copyRows(ctx, tx.conn, table, cols, n, values)
	}
	row := "(?" + repeat(", ?", width-1) + ")"
	var full *sql.Stmt
	args := make([]any, 0, batchRows*width)
	for lo := 0; lo < n; lo += batchRows {
		hi := min(lo+batchRows, n)
		args = args[:0]
		for i := lo; i < hi; i++ {
			args = values(i, args)
		}
		var err error
		if hi-lo == batchRows {
			if full == nil {
				full, err = tx.prepare(ctx, "INSERT INTO "+table+" ("+columns+") VALUES "+row+repeat(", "+row, batchRows-1))
				if err != nil {
					return fmt.Errorf("insert %s: %w", table, err)
				}
				defer full.Close()
			}
			_, err = full.ExecContext(ctx, args...)
		} else {
			_, err = tx.exec(ctx, "INSERT INTO "+table+" ("+columns+") VALUES "+row+repeat(", "+row, hi-lo-1), args...)
		}
		if err != nil {
			return fmt.Errorf("insert %s rows %d..%d: %w", table, lo, hi-1, err)
		}
		if testHook != nil && lo < n/2 && hi >= n/2 {
			testHook("insert " + table + " half")
		}
	}
	return nil
}

func repeat(s string, n int) string {
	out := make([]byte, 0, len(s)*n)
	for range n {
		out = append(out, s...)
	}
	return string(out)
}

func insertStages(ctx context.Context, tx txn, runID int64, stages []profile.StageSummary) error {
	return insertRows(ctx, tx, "stages", `run_id, stage_index, stage_name, stage_kind, reps, fwd_time_s, bwd_time_s,
		in_bytes, out_bytes, saved_bytes, fwd_tmp_bytes, bwd_tmp_bytes, param_bytes, `+exactColumns, 13+6, len(stages),
		func(i int, dst []any) []any {
			s := &stages[i]
			dst = append(dst, runID, s.Index, s.Name, s.Kind, s.Reps, s.FwdTimeS, s.BwdTimeS, s.InBytes, s.OutBytes,
				s.SavedBytes, s.FwdTmpBytes, s.BwdTmpBytes, s.ParamBytes)
			return appendExact(dst, &s.Exact)
		})
}

func insertMeasurements(ctx context.Context, tx txn, runID int64, ms []profile.Row) (int, error) {
	err := insertRows(ctx, tx, "measurements", `run_id, stage_index, rep, fwd_time_s, bwd_time_s, in_bytes,
		out_bytes, saved_bytes, fwd_tmp_bytes, bwd_tmp_bytes, param_bytes, `+exactColumns, 11+6, len(ms),
		func(i int, dst []any) []any {
			m := &ms[i]
			dst = append(dst, runID, m.StageIndex, m.Rep, m.FwdTimeS, m.BwdTimeS, m.InBytes, m.OutBytes,
				m.SavedBytes, m.FwdTmpBytes, m.BwdTmpBytes, m.ParamBytes)
			return appendExact(dst, &m.Exact)
		})
	if err != nil {
		return 0, err
	}
	return len(ms), nil
}

// Stages returns the stages of run id in index order (the loss last), or an error
// wrapping chainplan.ErrNotFound when there is no such run.
func (db *DB) Stages(ctx context.Context, runID int64) ([]profile.StageSummary, error) {
	if _, err := db.Run(ctx, runID); err != nil {
		return nil, err
	}
	rows, err := db.query(ctx, `SELECT stage_index, stage_name, stage_kind, reps, fwd_time_s, bwd_time_s,
		in_bytes, out_bytes, saved_bytes, fwd_tmp_bytes, bwd_tmp_bytes, param_bytes, `+exactColumns+`, `+stageParallelColumns+`
		FROM stages LEFT JOIN stage_parallel USING (run_id, stage_index) WHERE run_id = ? ORDER BY stage_index`, runID)
	if err != nil {
		return nil, fmt.Errorf("read stages of run %d: %w", runID, err)
	}
	defer rows.Close()
	var out []profile.StageSummary
	for rows.Next() {
		var s profile.StageSummary
		var opts sql.NullString
		var par parallelRow
		if err := rows.Scan(append([]any{&s.Index, &s.Name, &s.Kind, &s.Reps, &s.FwdTimeS, &s.BwdTimeS, &s.InBytes, &s.OutBytes,
			&s.SavedBytes, &s.FwdTmpBytes, &s.BwdTmpBytes, &s.ParamBytes,
			&s.SavesInput, &s.SavesOutput, &s.RecomputeTimeS, &s.RecomputeTmpBytes, &opts, &s.ReplayBytes}, par.dest()...)...); err != nil {
			return nil, fmt.Errorf("read stages of run %d: %w", runID, err)
		}
		s.OptionsJSON = opts.String
		s.Parallel = par.parallel()
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read stages of run %d: %w", runID, err)
	}
	return out, nil
}

// Measurements returns the raw measurements of run id, by stage then repetition, with the
// name and kind of their stage, or an error wrapping chainplan.ErrNotFound when there is
// no such run.
func (db *DB) Measurements(ctx context.Context, runID int64) ([]profile.Row, error) {
	if _, err := db.Run(ctx, runID); err != nil {
		return nil, err
	}
	rows, err := db.query(ctx, `SELECT stage_index, stage_name, stage_kind, rep, m.fwd_time_s, m.bwd_time_s,
		m.in_bytes, m.out_bytes, m.saved_bytes, m.fwd_tmp_bytes, m.bwd_tmp_bytes, m.param_bytes,
		m.saves_input, m.saves_output, m.recompute_time_s, m.recompute_tmp_bytes, m.options_json, m.replay_bytes
		FROM measurements m JOIN stages USING (run_id, stage_index) WHERE run_id = ? ORDER BY stage_index, rep`, runID)
	if err != nil {
		return nil, fmt.Errorf("read measurements of run %d: %w", runID, err)
	}
	defer rows.Close()
	var out []profile.Row
	for rows.Next() {
		var m profile.Row
		var opts sql.NullString
		if err := rows.Scan(&m.StageIndex, &m.StageName, &m.StageKind, &m.Rep, &m.FwdTimeS, &m.BwdTimeS, &m.InBytes, &m.OutBytes,
			&m.SavedBytes, &m.FwdTmpBytes, &m.BwdTmpBytes, &m.ParamBytes,
			&m.SavesInput, &m.SavesOutput, &m.RecomputeTimeS, &m.RecomputeTmpBytes, &opts, &m.ReplayBytes); err != nil {
			return nil, fmt.Errorf("read measurements of run %d: %w", runID, err)
		}
		m.OptionsJSON = opts.String
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read measurements of run %d: %w", runID, err)
	}
	return out, nil
}

// exactColumns are the columns of the exact memory model (migration 0006) and the stage's
// random-number state (0008), in the order appendExact writes them.
const exactColumns = `saves_input, saves_output, recompute_time_s, recompute_tmp_bytes, options_json, replay_bytes`

// appendExact appends the values of exactColumns: the flags as 0 or 1 (both dialects store
// them as integers) and nulls for what was not measured.
func appendExact(dst []any, e *profile.Exact) []any {
	var opts sql.NullString
	if e.OptionsJSON != "" {
		opts = sql.NullString{String: e.OptionsJSON, Valid: true}
	}
	return append(dst, nullFlag(e.SavesInput), nullFlag(e.SavesOutput), e.RecomputeTimeS, e.RecomputeTmpBytes, opts, e.ReplayBytes)
}

// nullFlag is b as 0 or 1, or nil for a null.
func nullFlag(b profile.NullBool) any {
	if !b.Valid {
		return nil
	}
	return flag(b.Bool)
}
