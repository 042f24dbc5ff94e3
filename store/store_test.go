package store_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/store"
)

func TestOpenCreatesAndMigrates(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sub", "dir", "chainplan.db")
	db := mustOpen(t, path)
	if got, want := db.Path(), path; got != want {
		t.Fatalf("Path()=%q, want %q", got, want)
	}
	v, err := db.Version(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := v, store.SchemaVersion(); got != want || want < 1 {
		t.Fatalf("Version()=%d, want %d (≥ 1)", got, want)
	}
	rows, err := db.Query(ctx, "PRAGMA journal_mode")
	if err != nil {
		t.Fatal(err)
	}
	if !rows.Next() || rows.Values()[0] != "wal" {
		t.Fatalf("journal_mode=%v, want wal", rows.Values())
	}
	rows.Close()
	for _, table := range []string{"runs", "stages", "measurements", "plans", "executions", "run_summary", "stage_history", "plan_outcomes"} {
		if n := count(t, db, "SELECT count(*) FROM "+table); n != 0 {
			t.Fatalf("%s has %d rows in a new database", table, n)
		}
	}
	db.Close()
	// Opening again keeps the version and the data.
	db2 := mustOpen(t, path)
	if v2, _ := db2.Version(ctx); v2 != v {
		t.Fatalf("Version() after reopening = %d, want %d", v2, v)
	}
}

func TestOpenMustExist(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing.db")
	_, err := store.Open(context.Background(), path, store.Options{MustExist: true})
	if !errors.Is(err, chainplan.ErrNotFound) {
		t.Fatalf("Open error %v, want ErrNotFound", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Open with MustExist created %s", path)
	}
}

// rawExec runs SQL on a database file with plain go-sqlite3, bypassing the store.
func rawExec(t *testing.T, path, query string) {
	t.Helper()
	raw, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(query); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

func TestOpenRefuses(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, path string)
		want  string
	}{
		{"newer schema", func(t *testing.T, path string) {
			mustOpen(t, path).Close()
			rawExec(t, path, "PRAGMA user_version = 99")
		}, "schema version 99"},
		{"foreign database", func(t *testing.T, path string) {
			rawExec(t, path, "CREATE TABLE notes (body TEXT)")
		}, "not a chainplan database"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.db")
			tt.setup(t, path)
			_, err := store.Open(context.Background(), path, store.Options{})
			if !errors.Is(err, chainplan.ErrSchemaVersion) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Open error %v, want ErrSchemaVersion mentioning %q", err, tt.want)
			}
		})
	}
}

func TestOpenMigratesOlderSchema(t *testing.T) {
	// A database at version 0 with chainplan's application id, as a crash before the
	// first migration committed would leave it, is migrated.
	path := filepath.Join(t.TempDir(), "old.db")
	rawExec(t, path, "PRAGMA application_id = 1668312174") // 0x63706c6e, "cpln"
	db := mustOpen(t, path)
	if v, _ := db.Version(context.Background()); v != store.SchemaVersion() {
		t.Fatalf("Version()=%d, want %d", v, store.SchemaVersion())
	}
}
