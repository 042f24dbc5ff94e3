package store_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/chainplan/chainplan/store"
)

// queryAll runs a query and returns all its rows.
func queryAll(ctx context.Context, db *store.DB, q string, args ...any) ([]string, [][]any, error) {
	rows, err := db.Query(ctx, q, args...)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var out [][]any
	for rows.Next() {
		out = append(out, append([]any(nil), rows.Values()...))
	}
	return rows.Columns(), out, rows.Err()
}

func TestQueryRefusesWrites(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "chainplan.db")
	db := mustOpen(t, path)
	if _, err := db.Ingest(ctx, sampleProfile(1, 3, 2)); err != nil {
		t.Fatal(err)
	}
	writes := []string{
		"INSERT INTO runs (run_id) VALUES (7)",
		"UPDATE stages SET fwd_time_s = 0",
		"DELETE FROM measurements",
		"DROP TABLE plans",
		"DROP VIEW run_summary",
		"CREATE TABLE t (x)",
		"CREATE TEMP TABLE t (x)",
		"CREATE INDEX i ON runs (host)",
		"ALTER TABLE runs ADD COLUMN x",
		"REPLACE INTO runs (run_id) VALUES (1)",
		"SELECT 1; DELETE FROM runs",
		"WITH x AS (SELECT 1) DELETE FROM runs",
		"PRAGMA user_version = 5",
		"PRAGMA journal_mode = DELETE",
		"PRAGMA query_only = 0",
		"PRAGMA foreign_keys = OFF",
		"PRAGMA writable_schema = 1",
		"ATTACH DATABASE '" + filepath.Join(dir, "other.db") + "' AS other",
		"VACUUM",
		"VACUUM INTO '" + filepath.Join(dir, "copy.db") + "'",
		"REINDEX",
		"ANALYZE",
		"BEGIN IMMEDIATE",
		"SAVEPOINT s",
		"SELECT load_extension('/tmp/x.so')",
	}
	for _, q := range writes {
		t.Run(q, func(t *testing.T) {
			_, _, err := queryAll(ctx, db, q)
			if !errors.Is(err, store.ErrReadOnly) {
				t.Fatalf("Query(%q) error %v, want ErrReadOnly", q, err)
			}
		})
	}
	// Nothing changed: the same counts, version, journal mode, and no new files.
	if n := count(t, db, "SELECT count(*) FROM measurements"); n != 8 {
		t.Fatalf("measurements: %d rows, want 8", n)
	}
	if n := count(t, db, "SELECT count(*) FROM runs"); n != 1 {
		t.Fatalf("runs: %d rows, want 1", n)
	}
	if n := count(t, db, "SELECT count(*) FROM sqlite_schema WHERE name IN ('t', 'i')"); n != 0 {
		t.Fatalf("a table or index was created")
	}
	if v, _ := db.Version(ctx); v != store.SchemaVersion() {
		t.Fatalf("Version()=%d, want %d", v, store.SchemaVersion())
	}
	_, rows, err := queryAll(ctx, db, "PRAGMA journal_mode")
	if err != nil || rows[0][0] != "wal" {
		t.Fatalf("journal_mode=%v (%v), want wal", rows, err)
	}
	for _, f := range []string{"other.db", "copy.db"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Fatalf("a refused statement created %s", f)
		}
	}
}

func TestQueryReads(t *testing.T) {
	ctx := context.Background()
	db := tempDB(t)
	if _, err := db.Ingest(ctx, sampleProfile(1, 3, 2)); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		query string
		args  []any
		cols  []string
		first []any
		rows  int
	}{
		{"SELECT run_id, model_name, batch_size, input_bytes > 0 AS has_input FROM runs", nil,
			[]string{"run_id", "model_name", "batch_size", "has_input"}, []any{int64(1), "gpt2-small", int64(16), int64(1)}, 1},
		{"SELECT stage_name, saved_bytes IS NULL FROM stages WHERE run_id = ? AND stage_kind = ?", []any{1, "loss"},
			nil, []any{"cross_entropy", int64(0)}, 1},
		{"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5) SELECT sum(i) FROM n", nil,
			nil, []any{int64(15)}, 1},
		{"SELECT json_extract(input_shape, '$[0]') FROM runs", nil, nil, []any{int64(16)}, 1},
		{"SELECT name FROM pragma_table_info('plans') WHERE name = 'makespan_s'", nil, nil, []any{"makespan_s"}, 1},
		{"PRAGMA table_info(runs)", nil, nil, nil, 28},
		{"SELECT 1.5, NULL, x'00ff'", nil, nil, []any{1.5, nil, []byte{0, 0xff}}, 1},
		{"SELECT * FROM stage_history WHERE stage_name = 'nope'", nil, nil, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			cols, rows, err := queryAll(ctx, db, tt.query, tt.args...)
			if err != nil {
				t.Fatalf("Query: %v", err)
			}
			if len(rows) != tt.rows {
				t.Fatalf("%d rows, want %d", len(rows), tt.rows)
			}
			if tt.cols != nil && !equal(cols, tt.cols) {
				t.Fatalf("columns %v, want %v", cols, tt.cols)
			}
			if tt.first != nil && !equalRow(rows[0], tt.first) {
				t.Fatalf("first row %#v, want %#v", rows[0], tt.first)
			}
		})
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func equalRow(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		ab, okA := a[i].([]byte)
		bb, okB := b[i].([]byte)
		if okA || okB {
			if string(ab) != string(bb) {
				return false
			}
			continue
		}
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestQueryBadSQL(t *testing.T) {
	db := tempDB(t)
	for _, q := range []string{"SELEC 1", "SELECT * FROM nowhere", "SELECT nope FROM runs", "SELECT ?"} {
		if _, _, err := queryAll(context.Background(), db, q); !errors.Is(err, store.ErrBadQuery) {
			t.Errorf("Query(%q) error %v, want ErrBadQuery", q, err)
		}
	}
}

func TestQueryCanceled(t *testing.T) {
	db := tempDB(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := queryAll(ctx, db, "SELECT 1"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Query error %v, want context.Canceled", err)
	}
}
