// Package history is the glue between profile files, the store and the planners' chain
// model, shared by the CLI and the Python bindings: where the database lives, how a
// profile file is ingested, and how a stored run becomes a chain.
package history

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/profile"
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
// chainplan.chain/v1 chain by profile.ChainOf, as for a profile file. A run whose memory
// sizes were not measured fails with a *chainplan.ChainError naming the stage and the
// field.
func RunChain(ctx context.Context, db *store.DB, runID int64) (*chainplan.Chain, error) {
	stages, err := db.Stages(ctx, runID)
	if err != nil {
		return nil, err
	}
	c, err := profile.ChainOf(stages)
	if err != nil {
		return nil, fmt.Errorf("chain of run %d: %w", runID, err)
	}
	return c, nil
}

// StoreProfile returns what the store keeps of a profile read from a file whose content
// has SHA-256 sha (hex), found at path, of size bytes: its provenance, its stages'
// medians and its rows.
func StoreProfile(p *profiler.Profile, sha, path string, size int64) *store.Profile {
	rows := slices.Clone(p.Rows)
	// Rows in key order make the inserts into the WITHOUT ROWID table appends.
	slices.SortFunc(rows, func(a, b profile.Row) int {
		return cmp.Or(cmp.Compare(a.StageIndex, b.StageIndex), cmp.Compare(a.Rep, b.Rep))
	})
	return &store.Profile{
		Run:          store.Run{SHA256: sha, SourcePath: path, FileBytes: size, Metadata: p.Meta},
		Stages:       p.Stages(),
		Measurements: rows,
	}
}
