package main

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/profiler"
	"github.com/chainplan/chainplan/store"
)

// envDB names the environment variable that chooses the database file.
const envDB = "CHAINPLAN_DB"

// dbPath returns the database file a command uses: --db, else $CHAINPLAN_DB, else
// ~/.chainplan/chainplan.db.
func dbPath(cmd *cobra.Command) (string, error) {
	if f := cmd.Flag("db"); f != nil && f.Value.String() != "" {
		return f.Value.String(), nil
	}
	if p := os.Getenv(envDB); p != "" {
		return p, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", usagef("no home directory to keep the database in (%v); set --db or %s", err, envDB)
	}
	return filepath.Join(home, ".chainplan", "chainplan.db"), nil
}

// openStore opens the existing database of a command that reads it or adds to what it
// holds (show, export, sql, solve --run). A missing database is bad input.
func openStore(cmd *cobra.Command) (*store.DB, error) {
	return openDB(cmd, store.Options{MustExist: true})
}

// openStoreCreate opens the database for ingest, creating it when needed.
func openStoreCreate(cmd *cobra.Command) (*store.DB, error) {
	return openDB(cmd, store.Options{})
}

func openDB(cmd *cobra.Command, opts store.Options) (*store.DB, error) {
	path, err := dbPath(cmd)
	if err != nil {
		return nil, err
	}
	return store.Open(cmd.Context(), path, opts)
}

// resolveRun reads a RUN argument: a run id, or "latest" for the newest run.
func resolveRun(ctx context.Context, db *store.DB, arg string) (int64, error) {
	if arg == "latest" {
		return db.LatestRunID(ctx)
	}
	id, err := strconv.ParseInt(arg, 10, 64)
	if err != nil || id < 1 {
		return 0, usagef("RUN must be a run id (a positive integer, see chainplan profiles) or \"latest\", got %q", arg)
	}
	return id, nil
}

// loadRunChain returns the chain of a stored run: its stages' medians, turned into a
// chainplan.chain/v1 chain by the same code that aggregates profile files. A run whose
// memory sizes were not measured fails with a *chainplan.ChainError naming the stage and
// the field.
func loadRunChain(ctx context.Context, db *store.DB, runID int64) (*chainplan.Chain, error) {
	stages, err := db.Stages(ctx, runID)
	if err != nil {
		return nil, err
	}
	ps := make([]profiler.Stage, len(stages))
	for i, s := range stages {
		ps[i] = profiler.Stage{Index: s.Index, Name: s.Name, Kind: s.Kind, Reps: s.Reps, FwdTimeS: s.FwdTimeS,
			BwdTimeS: s.BwdTimeS, InBytes: s.InBytes, OutBytes: s.OutBytes, SavedBytes: profiler.NullInt64(s.SavedBytes),
			FwdTmpBytes: profiler.NullInt64(s.FwdTmpBytes), BwdTmpBytes: profiler.NullInt64(s.BwdTmpBytes),
			ParamBytes: s.ParamBytes}
	}
	c, err := profiler.ChainOf(ps)
	if err != nil {
		return nil, fmt.Errorf("chain of run %d: %w", runID, err)
	}
	return c, nil
}

// recordPlan stores a plan computed from run runID's chain, with the solver parameters
// that produced it, and returns the plan id.
func recordPlan(ctx context.Context, db *store.DB, runID int64, plan *chainplan.Plan, params map[string]any) (int64, error) {
	return db.RecordPlan(ctx, runID, plan, params, Version)
}

// ingestFile reads, validates and stores one profile file. A file that is not a valid
// profile is bad input (a *usageError).
func ingestFile(ctx context.Context, db *store.DB, path string) (store.IngestResult, *profiler.Profile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
			return store.IngestResult{}, nil, &usageError{err}
		}
		return store.IngestResult{}, nil, err
	}
	p, err := profiler.Read(data)
	if err != nil {
		return store.IngestResult{}, nil, badProfile(fmt.Errorf("%s: %w", path, err))
	}
	sum := sha256.Sum256(data)
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	res, err := db.Ingest(ctx, storeProfile(p, hex.EncodeToString(sum[:]), abs, int64(len(data))))
	return res, p, err
}

// badProfile makes a profile reading error bad input (exit status 2).
func badProfile(err error) error {
	if errors.Is(err, profiler.ErrInvalidProfile) || errors.Is(err, chainplan.ErrSchemaVersion) {
		return &usageError{err}
	}
	return err
}

// storeProfile converts a profile read from a file into what the store keeps.
func storeProfile(p *profiler.Profile, sha, path string, size int64) *store.Profile {
	m := &p.Meta
	sp := &store.Profile{Run: store.Run{
		SHA256: sha, SourcePath: path, FileBytes: size, Format: m.Format, ModelName: m.ModelName,
		ModelSignature: m.ModelSignature, TorchVersion: m.TorchVersion, Device: m.Device, DeviceName: m.DeviceName,
		DType: m.DType, BatchSize: m.BatchSize, InputShape: m.InputShape, Threads: m.Threads,
		TimingMethod: m.TimingMethod, WarmupReps: m.WarmupReps, Reps: m.Reps, CreatedAt: m.CreatedAt, Host: m.Host,
		Metadata: m.Map(),
	}}
	for _, s := range p.Stages() {
		sp.Stages = append(sp.Stages, store.Stage{Index: s.Index, Name: s.Name, Kind: s.Kind, Reps: s.Reps,
			FwdTimeS: s.FwdTimeS, BwdTimeS: s.BwdTimeS, InBytes: s.InBytes, OutBytes: s.OutBytes,
			SavedBytes: sqlNull(s.SavedBytes), FwdTmpBytes: sqlNull(s.FwdTmpBytes), BwdTmpBytes: sqlNull(s.BwdTmpBytes),
			ParamBytes: s.ParamBytes})
	}
	sp.Measurements = make([]store.Measurement, len(p.Rows))
	for i, r := range p.Rows {
		sp.Measurements[i] = store.Measurement{StageIndex: r.StageIndex, Rep: r.Rep, FwdTimeS: r.FwdTimeS,
			BwdTimeS: r.BwdTimeS, InBytes: r.InBytes, OutBytes: r.OutBytes, SavedBytes: sqlNull(r.SavedBytes),
			FwdTmpBytes: sqlNull(r.FwdTmpBytes), BwdTmpBytes: sqlNull(r.BwdTmpBytes), ParamBytes: r.ParamBytes}
	}
	// Rows in key order make the inserts into the WITHOUT ROWID table appends.
	slices.SortFunc(sp.Measurements, func(a, b store.Measurement) int {
		if a.StageIndex != b.StageIndex {
			return a.StageIndex - b.StageIndex
		}
		return a.Rep - b.Rep
	})
	return sp
}

// sqlNull converts a profiler.NullInt64 into the store's sql.NullInt64 (same shape).
func sqlNull(v profiler.NullInt64) sql.NullInt64 { return sql.NullInt64(v) }

// storedRun is the stored profile `solve --run` plans from.
type storedRun struct {
	db *store.DB
	id int64
}

// solveInput returns the chain `solve` plans: the --chain file, or with --run the chain of
// a stored run, together with the open database to record the plan in (nil for a file).
func solveInput(cmd *cobra.Command, f solveFlags) (*chainplan.Chain, *storedRun, error) {
	if f.run == "" {
		c, err := chainplan.ReadChain(f.chain)
		return c, nil, err
	}
	db, err := openStore(cmd)
	if err != nil {
		return nil, nil, err
	}
	id, err := resolveRun(cmd.Context(), db, f.run)
	if err == nil {
		var c *chainplan.Chain
		if c, err = loadRunChain(cmd.Context(), db, id); err == nil {
			return c, &storedRun{db: db, id: id}, nil
		}
	}
	db.Close()
	return nil, nil, err
}

// record stores the plan solve computed, with the options that produced it, and says so
// on standard error (standard output carries the plan alone).
func (s *storedRun) record(ctx context.Context, e *env, p *chainplan.Plan, f solveFlags) error {
	params := map[string]any{"algo": f.algo, "budget": f.budget, "slots": f.slots}
	if f.segments > 0 {
		params["segments"] = f.segments
	}
	if p.Segments > 0 {
		params["chosen_segments"] = p.Segments
	}
	id, err := recordPlan(ctx, s.db, s.id, p, params)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "chainplan: recorded as plan %d of run %d in %s\n", id, s.id, s.db.Path())
	return nil
}
