package store_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
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

// refusedWrites are statements that would change the database, refused by both backends:
// each fails with ErrReadOnly and changes nothing.
var refusedWrites = []string{
	"INSERT INTO runs (run_id) VALUES (7)",
	"UPDATE stages SET fwd_time_s = 0",
	"DELETE FROM measurements",
	"DROP TABLE plans",
	"DROP VIEW run_summary",
	"CREATE TABLE t (x INTEGER)",
	"CREATE TEMP TABLE t (x INTEGER)",
	"CREATE INDEX i ON runs (host)",
	"ALTER TABLE runs ADD COLUMN x INTEGER",
	"WITH x AS (SELECT 1) DELETE FROM runs",
}

// sqliteRefusedWrites are SQLite's own ways to write or change a setting.
func sqliteRefusedWrites(dir string) []string {
	return []string{
		"REPLACE INTO runs (run_id) VALUES (1)",
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
}

// postgresRefusedWrites are PostgreSQL's: writes in a function or a procedure block, a
// block that drops the reader role first, sequences, privileges, maintenance.
var postgresRefusedWrites = []string{
	"WITH x AS (DELETE FROM runs RETURNING run_id) SELECT count(*) FROM x",
	"INSERT INTO runs (run_id) VALUES (7) ON CONFLICT DO NOTHING",
	"TRUNCATE runs CASCADE",
	"DO $$ BEGIN RESET ROLE; DELETE FROM measurements; END $$",
	"DO $$ BEGIN EXECUTE 'SET TRANSACTION READ WRITE'; DELETE FROM measurements; END $$",
	"SELECT nextval(pg_get_serial_sequence('runs', 'run_id'))",
	"SELECT setval(pg_get_serial_sequence('runs', 'run_id'), 100)",
	"GRANT INSERT ON runs TO PUBLIC",
	"COMMENT ON TABLE runs IS 'x'",
	"CREATE SCHEMA other",
	"CREATE FUNCTION f() RETURNS integer LANGUAGE sql AS 'SELECT 1'",
	"CREATE OR REPLACE FUNCTION round(x double precision, digits integer) RETURNS double precision LANGUAGE sql AS 'SELECT 0::float8'",
	"VACUUM runs",
	"REINDEX TABLE runs",
	"CLUSTER runs USING runs_pkey",
	"REFRESH MATERIALIZED VIEW run_summary",
	"LOCK TABLE runs IN ACCESS EXCLUSIVE MODE",
	"SELECT pg_catalog.lo_import('/etc/hostname')",
	"COPY runs (run_id) FROM STDIN",
	"ALTER SYSTEM SET work_mem = '1GB'",
}

func TestQueryRefusesWrites(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		ctx := context.Background()
		dir := t.TempDir()
		db := b.open(t)
		if _, err := db.Ingest(ctx, sampleProfile(1, 3, 2)); err != nil {
			t.Fatal(err)
		}
		writes := append([]string(nil), refusedWrites...)
		if b.postgres() {
			writes = append(writes, postgresRefusedWrites...)
		} else {
			writes = append(writes, sqliteRefusedWrites(dir)...)
		}
		for _, q := range writes {
			t.Run(q, func(t *testing.T) {
				_, _, err := queryAll(ctx, db, q)
				if !errors.Is(err, store.ErrReadOnly) {
					t.Fatalf("Query(%q) error %v, want ErrReadOnly", q, err)
				}
			})
		}
		// One statement at a time: a write after a ';' never runs.
		for _, q := range []string{"SELECT 1; DELETE FROM runs", "SET ROLE NONE; DELETE FROM runs"} {
			if _, _, err := queryAll(ctx, db, q); !errors.Is(err, store.ErrBadQuery) {
				t.Errorf("Query(%q) error %v, want ErrBadQuery", q, err)
			}
		}
		// Nothing changed: the same counts, version, and no new objects or files.
		if n := count(t, db, "SELECT count(*) FROM measurements"); n != 8 {
			t.Fatalf("measurements: %d rows, want 8", n)
		}
		if n := count(t, db, "SELECT count(*) FROM runs"); n != 1 {
			t.Fatalf("runs: %d rows, want 1", n)
		}
		if v, _ := db.Version(ctx); v != store.SchemaVersion() {
			t.Fatalf("Version()=%d, want %d", v, store.SchemaVersion())
		}
		if b.postgres() {
			if n := count(t, db, "SELECT count(*) FROM pg_class WHERE relnamespace = current_schema()::regnamespace AND relname IN ('t', 'i')"); n != 0 {
				t.Fatalf("a table or index was created")
			}
			if n := count(t, db, "SELECT count(*) FROM pg_namespace WHERE nspname = 'other'"); n != 0 {
				t.Fatalf("a schema was created")
			}
			if n := count(t, db, "SELECT count(*) FROM pg_proc WHERE proname = 'f' AND pronamespace = current_schema()::regnamespace"); n != 0 {
				t.Fatalf("a function was created")
			}
			// The reader role still holds no write grant, and the next query still runs.
			if n := count(t, db, "SELECT count(*) FROM information_schema.role_table_grants WHERE grantee = 'chainplan_reader' AND privilege_type <> 'SELECT'"); n != 0 {
				t.Fatalf("the reader role holds %d write grants", n)
			}
			if n := count(t, db, "SELECT round(CAST(2.5 AS double precision), 0)::bigint"); n != 3 {
				t.Fatalf("round() was replaced: round(2.5, 0) = %d", n)
			}
			return
		}
		if n := count(t, db, "SELECT count(*) FROM sqlite_schema WHERE name IN ('t', 'i')"); n != 0 {
			t.Fatalf("a table or index was created")
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
	})
}

// readCase is a query and what it returns.
type readCase struct {
	query string
	args  []any
	cols  []string
	first []any
	rows  int
}

func TestQueryReads(t *testing.T) {
	common := []readCase{
		{"SELECT run_id, model_name, batch_size, CASE WHEN input_bytes > 0 THEN 1 ELSE 0 END AS has_input FROM runs", nil,
			[]string{"run_id", "model_name", "batch_size", "has_input"}, []any{int64(1), "gpt2-small", int64(16), int64(1)}, 1},
		{"SELECT stage_name, saved_bytes IS NULL FROM stages WHERE run_id = $1 AND stage_kind = $2", []any{1, "loss"},
			nil, []any{"cross_entropy", int64(0)}, 1},
		{"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5) SELECT sum(i) FROM n", nil,
			nil, []any{int64(15)}, 1},
		{"SELECT json_extract(input_shape, '$[0]') FROM runs", nil, nil, nil, 1},
		{"SELECT CAST(json_extract(input_shape, '$[0]') AS INTEGER) FROM runs", nil, nil, []any{int64(16)}, 1},
		{"SELECT 1.5, NULL", nil, nil, []any{1.5, nil}, 1},
		{"SELECT * FROM stage_history WHERE stage_name = 'nope'", nil, nil, nil, 0},
	}
	eachBackend(t, func(t *testing.T, b testBackend) {
		ctx := context.Background()
		db := b.open(t)
		if _, err := db.Ingest(ctx, sampleProfile(1, 3, 2)); err != nil {
			t.Fatal(err)
		}
		tests := append([]readCase(nil), common...)
		if b.postgres() {
			tests = append(tests,
				readCase{"SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'plans' AND column_name = 'makespan_s'",
					nil, nil, []any{"makespan_s"}, 1},
				readCase{"SELECT '\\x00ff'::bytea, true, 2.50::numeric, 7::numeric, DATE '2025-06-01', '{\"a\": 1}'::jsonb", nil, nil,
					[]any{[]byte{0, 0xff}, int64(1), 2.5, int64(7), "2025-06-01", `{"a": 1}`}, 1},
				readCase{"SELECT current_user", nil, nil, []any{"chainplan_reader"}, 1},
				readCase{"SELECT current_setting('transaction_read_only')", nil, nil, []any{"on"}, 1},
			)
		} else {
			tests = append(tests,
				readCase{"SELECT name FROM pragma_table_info('plans') WHERE name = 'makespan_s'", nil, nil, []any{"makespan_s"}, 1},
				readCase{"PRAGMA table_info(runs)", nil, nil, nil, 28},
				readCase{"SELECT x'00ff'", nil, nil, []any{[]byte{0, 0xff}}, 1},
			)
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
	})
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
	eachBackend(t, func(t *testing.T, b testBackend) {
		db := b.open(t)
		for _, q := range []string{"SELEC 1", "SELECT * FROM nowhere", "SELECT nope FROM runs", "SELECT $1", "SELECT nope(1)"} {
			if _, _, err := queryAll(context.Background(), db, q); !errors.Is(err, store.ErrBadQuery) {
				t.Errorf("Query(%q) error %v, want ErrBadQuery", q, err)
			}
		}
	})
}

// TestQueryOneStatement: a query runs exactly one statement; a trailing ";" and comments
// are fine, a second statement is refused before anything runs (issue 33: on SQLite
// "SELECT 1; SELECT 2" ran both and returned the last).
func TestQueryOneStatement(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		ctx := context.Background()
		db := b.open(t)
		for q, want := range map[string]any{
			"SELECT 1;":                         int64(1),
			"SELECT 1;;":                        int64(1),
			"SELECT 1; -- done":                 int64(1),
			"-- the answer\nSELECT 1":           int64(1),
			"SELECT 1 /* ; SELECT 2 */ ;":       int64(1),
			"SELECT 1 -- ; SELECT 2\n":          int64(1),
			"SELECT 'a;b'":                      "a;b",
			`SELECT 'it''s; fine' AS "x;y"`:     "it's; fine",
			"SELECT CAST($1 AS TEXT) -- $2 ; x": nil, // bound below
		} {
			var args []any
			if want == nil {
				args, want = []any{"$1"}, "$1"
			}
			_, rows, err := queryAll(ctx, db, q, args...)
			if err != nil || len(rows) != 1 || rows[0][0] != want {
				t.Errorf("Query(%q) = %v, %v; want one row %v", q, rows, err, want)
			}
		}
		for _, q := range []string{"SELECT 1; SELECT 2", "SELECT 1;\nSELECT 2;", "SELECT 'a;'; SELECT 2", "SELECT 1 /* x */; SELECT 2 -- y"} {
			_, rows, err := queryAll(ctx, db, q)
			if !errors.Is(err, store.ErrBadQuery) || !strings.Contains(err.Error(), "several statements; run one at a time") {
				t.Errorf("Query(%q) = %v, %v; want ErrBadQuery saying it holds several statements", q, rows, err)
			}
		}
		for _, q := range []string{"", "  ", "-- nothing"} {
			if _, _, err := queryAll(ctx, db, q); err != nil && !errors.Is(err, store.ErrBadQuery) {
				t.Errorf("Query(%q) = %v, want no rows or ErrBadQuery", q, err)
			}
		}
	})
}

// TestQueryArguments: every argument binds one placeholder, $N the Nth on both databases;
// an argument too many or too few is refused (issue 33: extra arguments were ignored).
func TestQueryArguments(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		ctx := context.Background()
		db := b.open(t)
		_, rows, err := queryAll(ctx, db, "SELECT CAST($2 AS TEXT), CAST($1 AS TEXT), CAST($2 AS TEXT)", "a", "b")
		if err != nil || len(rows) != 1 || !equalRow(rows[0], []any{"b", "a", "b"}) {
			t.Errorf("$2, $1, $2 of (a, b) = %v, %v; want b, a, b", rows, err)
		}
		for _, tt := range []struct {
			query string
			args  []any
			want  string
		}{
			{"SELECT CAST($1 AS INTEGER) + 1", []any{1, 2}, "the statement has 1 placeholder and 2 arguments given"},
			{"SELECT 1", []any{3}, "the statement has 0 placeholders and 1 argument given"},
			{"SELECT CAST($1 AS TEXT), CAST($2 AS TEXT)", []any{"a"}, "the statement has 2 placeholders and 1 argument given"},
		} {
			_, _, err := queryAll(ctx, db, tt.query, tt.args...)
			if !errors.Is(err, store.ErrBadQuery) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Query(%q, %v) = %v; want ErrBadQuery saying %q", tt.query, tt.args, err, tt.want)
			}
		}
		if b.postgres() {
			return
		}
		// SQLite also takes ? (the next argument) and ?N; "$1abc" is a name, not $1.
		_, rows, err = queryAll(ctx, db, "SELECT ?, ?", int64(1), "x")
		if err != nil || !equalRow(rows[0], []any{int64(1), "x"}) {
			t.Errorf("SELECT ?, ? = %v, %v", rows, err)
		}
		_, rows, err = queryAll(ctx, db, "SELECT $1abc", "n")
		if err != nil || !equalRow(rows[0], []any{"n"}) {
			t.Errorf("SELECT $1abc = %v, %v", rows, err)
		}
	})
}

func TestQueryCanceled(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		db := b.open(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, _, err := queryAll(ctx, db, "SELECT 1"); !errors.Is(err, context.Canceled) {
			t.Fatalf("Query error %v, want context.Canceled", err)
		}
	})
}
