package store

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strconv"
	"sync"

	"github.com/chainplan/chainplan"
)

// migrationFS holds the schema, one forward migration per file, NNNN_name.sql. Version N
// of the schema is the result of applying files 0001 to N in order.
//
//go:embed migrations/*.sql
var migrationFS embed.FS

// applicationID marks a SQLite file as a chainplan database ("cpln").
const applicationID = 0x63706c6e

// migration is one embedded schema change.
type migration struct {
	version int
	name    string
	sql     string
}

var migrationName = regexp.MustCompile(`^(\d{4})_([a-z0-9_]+)\.sql$`)

// migrations returns the embedded migrations in order. They must be numbered 1, 2, ...
// without gaps; a violation is a build mistake and panics.
var migrations = sync.OnceValue(loadMigrations)

func loadMigrations() []migration {
	entries, err := migrationFS.ReadDir("migrations")
	if err != nil {
		panic(fmt.Sprintf("store: read embedded migrations: %v", err))
	}
	var out []migration
	for _, e := range entries {
		m := migrationName.FindStringSubmatch(e.Name())
		if m == nil {
			panic(fmt.Sprintf("store: migration file %q is not named NNNN_name.sql", e.Name()))
		}
		v, _ := strconv.Atoi(m[1])
		body, err := migrationFS.ReadFile(path.Join("migrations", e.Name()))
		if err != nil {
			panic(fmt.Sprintf("store: read migration %s: %v", e.Name(), err))
		}
		out = append(out, migration{version: v, name: m[2], sql: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i, m := range out {
		if m.version != i+1 {
			panic(fmt.Sprintf("store: migration %04d_%s: want version %d (no gaps)", m.version, m.name, i+1))
		}
	}
	return out
}

// SchemaVersion returns the version of the schema this build creates and reads: the
// number of the last embedded migration.
func SchemaVersion() int { return len(migrations()) }

// Version returns the schema version of the open database (PRAGMA user_version). It
// reads through a read-only connection, so that opening an up-to-date database for queries
// never touches the writer, unless that connection cannot open the file (a WAL left by a
// crashed process needs recovery, which a read-only connection cannot run).
func (db *DB) Version(ctx context.Context) (int, error) {
	var v int
	err := db.r.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v)
	if err != nil && ctx.Err() == nil {
		err = db.w.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v)
	}
	if err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}

// migrate brings the schema to SchemaVersion in one write transaction. Several processes
// may open a new database at once: the version is read again after the write lock is
// taken, so each migration runs exactly once.
func (db *DB) migrate(ctx context.Context) error {
	ms := migrations()
	latest := len(ms)
	v, err := db.Version(ctx)
	if err != nil {
		return err
	}
	if v == latest {
		return nil
	}
	if v > latest {
		return fmt.Errorf("%w: the database has schema version %d, this chainplan reads versions up to %d; upgrade chainplan",
			chainplan.ErrSchemaVersion, v, latest)
	}
	return db.write(ctx, func(tx *sql.Tx) error {
		var v, app, tables int
		if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		if err := tx.QueryRowContext(ctx, "PRAGMA application_id").Scan(&app); err != nil {
			return fmt.Errorf("read application id: %w", err)
		}
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&tables); err != nil {
			return fmt.Errorf("read schema: %w", err)
		}
		if app != applicationID && (v != 0 || tables != 0) {
			return fmt.Errorf("%w: not a chainplan database (application_id %#x, user_version %d, %d schema objects)",
				chainplan.ErrSchemaVersion, app, v, tables)
		}
		if v > latest {
			return fmt.Errorf("%w: the database has schema version %d, this chainplan reads versions up to %d; upgrade chainplan",
				chainplan.ErrSchemaVersion, v, latest)
		}
		for _, m := range ms[v:] {
			if _, err := tx.ExecContext(ctx, m.sql); err != nil {
				return fmt.Errorf("migrate to version %d (%s): %w", m.version, m.name, err)
			}
		}
		// PRAGMA arguments cannot be bound; both values are integers this code controls.
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d; PRAGMA application_id = %d", latest, applicationID)); err != nil {
			return fmt.Errorf("set schema version: %w", err)
		}
		return nil
	})
}
