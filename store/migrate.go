package store

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strconv"
	"sync"

	"github.com/chainplan/chainplan"
)

// migrationFS holds the schema, one forward migration per file and dialect:
// migrations/DIALECT/NNNN_name.sql, DIALECT being sqlite or postgres. Version N of the
// schema is the result of applying files 0001 to N in order. Both dialects have the same
// numbers and names (a test checks it), and the same tables, views and columns.
//
//go:embed migrations
var migrationFS embed.FS

// dialects are the folders of migrationFS, one per backend.
var dialects = []string{"sqlite", "postgres"}

// migration is one embedded schema change.
type migration struct {
	version int
	name    string
	sql     string
}

var migrationName = regexp.MustCompile(`^(\d{4})_([a-z0-9_]+)\.sql$`)

// migrations returns the embedded migrations of each dialect, in order. They must be
// numbered 1, 2, ... without gaps, in the dialects' folders only; a violation is a build
// mistake and panics.
var migrations = sync.OnceValue(loadMigrations)

func loadMigrations() map[string][]migration {
	top, err := migrationFS.ReadDir("migrations")
	if err != nil {
		panic(fmt.Sprintf("store: read embedded migrations: %v", err))
	}
	for _, e := range top {
		if !e.IsDir() {
			panic(fmt.Sprintf("store: migration file migrations/%s is in no dialect's folder: "+
				"write it as migrations/sqlite/%[1]s and migrations/postgres/%[1]s (docs/ARCHITECTURE.md)", e.Name()))
		}
	}
	out := map[string][]migration{}
	for _, d := range dialects {
		out[d] = loadDialect(d)
	}
	return out
}

func loadDialect(dialect string) []migration {
	dir := path.Join("migrations", dialect)
	entries, err := fs.ReadDir(migrationFS, dir)
	if err != nil {
		panic(fmt.Sprintf("store: read embedded migrations of %s: %v", dialect, err))
	}
	var out []migration
	for _, e := range entries {
		m := migrationName.FindStringSubmatch(e.Name())
		if m == nil {
			panic(fmt.Sprintf("store: migration file %s/%s is not named NNNN_name.sql", dir, e.Name()))
		}
		v, _ := strconv.Atoi(m[1])
		body, err := migrationFS.ReadFile(path.Join(dir, e.Name()))
		if err != nil {
			panic(fmt.Sprintf("store: read migration %s/%s: %v", dir, e.Name(), err))
		}
		out = append(out, migration{version: v, name: m[2], sql: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i, m := range out {
		if m.version != i+1 {
			panic(fmt.Sprintf("store: migration %s/%04d_%s: want version %d (no gaps)", dir, m.version, m.name, i+1))
		}
	}
	return out
}

// SchemaVersion returns the version of the schema this build creates and reads: the
// number of the last embedded migration.
func SchemaVersion() int { return len(migrations()["sqlite"]) }

// Version returns the schema version of the open database.
func (db *DB) Version(ctx context.Context) (int, error) {
	v, err := db.be.version(ctx, db)
	if err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}

// migrate brings the schema to SchemaVersion in one write transaction. Several processes
// may open a new database at once: the backend's lock serializes them and the version is
// read again under it, so each migration runs exactly once.
func (db *DB) migrate(ctx context.Context) error {
	return db.migrateTo(ctx, len(migrations()[db.be.dialect()]))
}

// migrateTo brings the schema to version target (tests stop short of the newest).
func (db *DB) migrateTo(ctx context.Context, target int) error {
	ms := migrations()[db.be.dialect()]
	latest := len(ms)
	v, err := db.Version(ctx)
	if err != nil {
		return err
	}
	if v > latest {
		return newerSchema(v, latest)
	}
	if v >= target {
		return nil
	}
	return db.write(ctx, func(tx txn) error {
		v, err := db.be.lockSchema(ctx, tx.tx)
		if err != nil {
			return err
		}
		if v > latest {
			return newerSchema(v, latest)
		}
		if v >= target {
			return nil // another process migrated it meanwhile
		}
		for _, m := range ms[v:target] {
			if _, err := tx.tx.ExecContext(ctx, m.sql); err != nil {
				return fmt.Errorf("migrate to version %d (%s): %w", m.version, m.name, err)
			}
		}
		if err := db.be.setVersion(ctx, tx.tx, target); err != nil {
			return fmt.Errorf("set schema version: %w", err)
		}
		return nil
	})
}

func newerSchema(v, latest int) error {
	return fmt.Errorf("%w: the database has schema version %d, this chainplan reads versions up to %d; upgrade chainplan",
		chainplan.ErrSchemaVersion, v, latest)
}
