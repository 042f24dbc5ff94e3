// Package history is the glue between profile files, the store and the planners' chain
// model, shared by the CLI and the Python bindings: where the database lives, how a
// profile file is ingested, and how a stored run becomes a chain.
package history

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/profiler"
	"github.com/chainplan/chainplan/store"
)

// EnvDB names the environment variable that chooses the database file.
const EnvDB = "CHAINPLAN_DB"

// DefaultDBPath returns $CHAINPLAN_DB, or ~/.chainplan/chainplan.db.
func DefaultDBPath() (string, error) {
	if p := os.Getenv(EnvDB); p != "" {
		return p, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no home directory to keep the database in (%v); set --db or %s", err, EnvDB)
	}
	return filepath.Join(home, ".chainplan", "chainplan.db"), nil
}

// IngestFile reads, validates and stores one profile file. Errors wrap os.ErrNotExist
// for a missing file and profiler.ErrInvalidProfile or chainplan.ErrSchemaVersion for a
// file that is not a valid version-1 profile (the message names the column and row).
func IngestFile(ctx context.Context, db *store.DB, path string) (store.IngestResult, *profiler.Profile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return store.IngestResult{}, nil, err
	}
	p, err := profiler.Read(data)
	if err != nil {
		return store.IngestResult{}, nil, fmt.Errorf("%s: %w", path, err)
	}
	sum := sha256.Sum256(data)
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	res, err := db.Ingest(ctx, StoreProfile(p, hex.EncodeToString(sum[:]), abs, int64(len(data))))
	return res, p, err
}

// RunChain returns the chain of a stored run: its stages' medians, turned into a
// chainplan.chain/v1 chain by the same code that aggregates profile files. A run whose
// memory sizes were not measured fails with a *chainplan.ChainError naming the stage and
// the field.
func RunChain(ctx context.Context, db *store.DB, runID int64) (*chainplan.Chain, error) {
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

// StoreProfile converts a profile read from a file into what the store keeps.
func StoreProfile(p *profiler.Profile, sha, path string, size int64) *store.Profile {
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
