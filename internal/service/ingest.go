package service

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/profile"
	"github.com/chainplan/chainplan/profilearrow"
	"github.com/chainplan/chainplan/store"
)

// Ingest reads, validates and stores the profile file at path (see IngestBytes). A path
// that is no regular file with content (a directory, a named pipe, an empty or missing
// file) fails with a *chainplan.InputError (chainplan.ErrInputFile).
func (s *Service) Ingest(ctx context.Context, path string) (store.IngestResult, *profilearrow.Profile, error) {
	data, err := chainplan.ReadInput(path, profilearrow.Want)
	if err != nil {
		return store.IngestResult{}, nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	return s.IngestBytes(ctx, data, abs)
}

// IngestBytes validates and stores the profile file content data, recording sourcePath
// as where it came from. The content identifies the run: the same bytes stored again
// return the existing run (IngestResult.Existing). Errors wrap profilearrow.ErrInvalidProfile
// or chainplan.ErrSchemaVersion for content that is not a valid version-1 profile (the
// message names sourcePath, the column and the row).
func (s *Service) IngestBytes(ctx context.Context, data []byte, sourcePath string) (store.IngestResult, *profilearrow.Profile, error) {
	p, err := profilearrow.Read(data)
	if err != nil {
		return store.IngestResult{}, nil, fmt.Errorf("%s: %w", sourcePath, err)
	}
	sum := sha256.Sum256(data)
	res, err := s.db.Ingest(ctx, storedProfile(p, hex.EncodeToString(sum[:]), sourcePath, int64(len(data))))
	return res, p, err
}

// storedProfile returns what the store keeps of a profile read from a file whose content
// has SHA-256 sha (hex), found at path, of size bytes: its provenance, its stages'
// medians and its rows.
func storedProfile(p *profilearrow.Profile, sha, path string, size int64) *store.Profile {
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
