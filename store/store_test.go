package store_test

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/pgtest"
	"github.com/chainplan/chainplan/store"
)

// documented are the tables and views docs/sql.md documents.
var documented = []string{"runs", "stages", "measurements", "plans", "executions", "bandwidths",
	"run_summary", "stage_history", "plan_outcomes"}

func TestOpenCreatesAndMigrates(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		ctx := context.Background()
		target := b.target(t)
		if !b.postgres() {
			target = filepath.Join(filepath.Dir(target), "sub", "dir", "chainplan.db")
		}
		db := mustOpen(t, target)
		if got, want := db.Backend(), b.name; got != want {
			t.Fatalf("Backend()=%q, want %q", got, want)
		}
		if !b.postgres() && db.Path() != target {
			t.Fatalf("Path()=%q, want %q", db.Path(), target)
		}
		v, err := db.Version(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := v, store.SchemaVersion(); got != want || want < 1 {
			t.Fatalf("Version()=%d, want %d (≥ 1)", got, want)
		}
		if !b.postgres() {
			rows, err := db.Query(ctx, "PRAGMA journal_mode")
			if err != nil {
				t.Fatal(err)
			}
			if !rows.Next() || rows.Values()[0] != "wal" {
				t.Fatalf("journal_mode=%v, want wal", rows.Values())
			}
			rows.Close()
		}
		for _, table := range documented {
			if n := count(t, db, "SELECT count(*) FROM "+table); n != 0 {
				t.Fatalf("%s has %d rows in a new database", table, n)
			}
		}
		db.Close()
		// Opening again keeps the version and the data.
		db2 := mustOpen(t, target)
		if v2, _ := db2.Version(ctx); v2 != v {
			t.Fatalf("Version() after reopening = %d, want %d", v2, v)
		}
	})
}

func TestOpenMustExist(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		target := b.target(t) // an empty folder, an empty schema
		_, err := store.Open(context.Background(), target, store.Options{MustExist: true})
		if !errors.Is(err, chainplan.ErrNotFound) {
			t.Fatalf("Open error %v, want ErrNotFound", err)
		}
		if !b.postgres() {
			if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("Open with MustExist created %s", target)
			}
			return
		}
		// A schema the DSN names that does not exist: not found, and not created.
		u, err := url.Parse(target)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		schema := "missing_" + q.Get("search_path")
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		missing := u.String()
		if _, err := store.Open(context.Background(), missing, store.Options{MustExist: true}); !errors.Is(err, chainplan.ErrNotFound) {
			t.Fatalf("Open of a missing schema: error %v, want ErrNotFound", err)
		}
		// Without MustExist, the schema is created.
		db, err := store.Open(context.Background(), missing, store.Options{})
		if err != nil {
			t.Fatalf("Open creating the schema: %v", err)
		}
		db.Close()
		if _, err := store.Open(context.Background(), missing, store.Options{MustExist: true}); err != nil {
			t.Fatalf("Open of the created store: %v", err)
		}
		adminExec(t, "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
	})
}

// rawExec runs SQL on a database bypassing the store: plain go-sqlite3 on a file, or the
// store's own DSN for PostgreSQL.
func rawExec(t *testing.T, b testBackend, target, query string) {
	t.Helper()
	driver := "sqlite3"
	if b.postgres() {
		driver = "pgx"
	}
	raw, err := sql.Open(driver, target)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(query); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// adminExec runs SQL as the test server's superuser.
func adminExec(t *testing.T, query string) {
	t.Helper()
	raw, err := sql.Open("pgx", pgtest.AdminDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(query); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

func TestOpenRefuses(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		newer := "PRAGMA user_version = 99"
		foreign := "CREATE TABLE notes (body TEXT)"
		if b.postgres() {
			newer = "UPDATE chainplan_schema SET version = 99"
		}
		tests := []struct {
			name  string
			setup func(t *testing.T, target string)
			want  string
		}{
			{"newer schema", func(t *testing.T, target string) {
				mustOpen(t, target).Close()
				rawExec(t, b, target, newer)
			}, "schema version 99"},
			{"foreign database", func(t *testing.T, target string) {
				rawExec(t, b, target, foreign)
			}, "not a chainplan"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				target := b.target(t)
				tt.setup(t, target)
				_, err := store.Open(context.Background(), target, store.Options{})
				if !errors.Is(err, chainplan.ErrSchemaVersion) || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("Open error %v, want ErrSchemaVersion mentioning %q", err, tt.want)
				}
			})
		}
	})
}

func TestOpenMigratesOlderSchema(t *testing.T) {
	// A database at version 0 with chainplan's application id, as a crash before the
	// first migration committed would leave it, is migrated.
	path := filepath.Join(t.TempDir(), "old.db")
	rawExec(t, allBackends[0], path, "PRAGMA application_id = 1668312174") // 0x63706c6e, "cpln"
	db := mustOpen(t, path)
	if v, _ := db.Version(context.Background()); v != store.SchemaVersion() {
		t.Fatalf("Version()=%d, want %d", v, store.SchemaVersion())
	}
}

func TestOpenBadDSN(t *testing.T) {
	for _, dsn := range []string{"postgres://u@host:notaport/db", "postgresql://%zz"} {
		if _, err := store.Open(context.Background(), dsn, store.Options{}); !errors.Is(err, store.ErrBadDSN) {
			t.Errorf("Open(%q) error %v, want ErrBadDSN", dsn, err)
		}
	}
}

func TestRedactDSN(t *testing.T) {
	for dsn, want := range map[string]string{
		"postgres://ann:s3cret@db.lab:5432/chainplan?search_path=team": "postgres://ann@db.lab:5432/chainplan?search_path=team",
		"postgresql://db/x?password=s3cret&sslmode=require":            "postgresql://db/x?sslmode=require",
		"postgresql://db/x?sslpassword=s3cret":                         "postgresql://db/x",
		"postgres://db/x":                                              "postgres://db/x",
	} {
		if got := store.RedactDSN(dsn); got != want {
			t.Errorf("RedactDSN(%q)=%q, want %q", dsn, got, want)
		}
	}
}
