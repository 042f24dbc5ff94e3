package store

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
)

// backend is what differs between the two databases a DB runs on, SQLite (sqlite.go) and
// PostgreSQL (postgres.go): how connections open, how migrations are locked and versioned,
// how a user's query is kept read-only, and how errors read. The tables and the SQL of
// every read and write are shared: the store writes its own statements with ?
// placeholders, which bind rewrites for the backend.
type backend interface {
	// dialect names the backend and the folder of its migrations: "sqlite" or "postgres".
	dialect() string
	// bind rewrites the ? placeholders of one of the store's statements for the backend.
	bind(query string) string
	// retryable reports an error after which the whole write transaction may run again:
	// SQLite's lock held by another process, PostgreSQL's serialization failure or
	// deadlock.
	retryable(err error) bool
	// version reads the schema version of the open database, 0 for an empty one.
	version(ctx context.Context, db *DB) (int, error)
	// lockSchema takes, in migration transaction tx, the lock that serializes migrations
	// across processes, checks that the database is chainplan's or empty, and returns its
	// schema version.
	lockSchema(ctx context.Context, tx *sql.Tx) (int, error)
	// setVersion records the schema version in tx, with whatever readers then need.
	setVersion(ctx context.Context, tx *sql.Tx, version int) error
	// query runs a user's statement read-only (DB.Query).
	query(ctx context.Context, db *DB, query string, args []any) (*Rows, error)
	// columns lists the columns of one of the store's tables, in order, or its tables
	// (and views) when table is "".
	columns(ctx context.Context, db *DB, table string) ([]string, error)
}

// dollarPlaceholders rewrites each ? of query into $1, $2, ... in order, PostgreSQL's
// placeholders. The store's statements hold no ? in string literals or identifiers.
func dollarPlaceholders(query string) string {
	if !strings.Contains(query, "?") {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 8)
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// txn is a write transaction running the store's own statements: it binds their
// placeholders for the backend.
type txn struct {
	tx   *sql.Tx
	be   backend
	conn *sql.Conn // the connection tx runs on, for a backend's bulk copy (bulk.go)
}

func (t txn) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return t.tx.ExecContext(ctx, t.be.bind(query), args...)
}

func (t txn) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	return t.tx.QueryRowContext(ctx, t.be.bind(query), args...)
}

func (t txn) prepare(ctx context.Context, query string) (*sql.Stmt, error) {
	return t.tx.PrepareContext(ctx, t.be.bind(query))
}

// queryRow runs one of the store's own reads, returning at most one row.
func (db *DB) queryRow(ctx context.Context, query string, args ...any) row {
	return row{db.r.QueryRowContext(ctx, db.be.bind(query), args...), db}
}

// query runs one of the store's own reads.
func (db *DB) query(ctx context.Context, query string, args ...any) (*rows, error) {
	r, err := db.r.QueryContext(ctx, db.be.bind(query), args...)
	if err != nil {
		return nil, db.fault(err)
	}
	return &rows{r, db}, nil
}

// row and rows are the results of the store's own reads: their errors name a damaged
// database or a full disk as such (FaultError), whichever read meets it.
type row struct {
	*sql.Row
	db *DB
}

func (r row) Scan(dest ...any) error { return r.db.fault(r.Row.Scan(dest...)) }

type rows struct {
	*sql.Rows
	db *DB
}

func (r *rows) Scan(dest ...any) error { return r.db.fault(r.Rows.Scan(dest...)) }
func (r *rows) Err() error             { return r.db.fault(r.Rows.Err()) }

// columns lists the columns of table in order (the store's tables when table is "").
func (db *DB) columns(ctx context.Context, table string) ([]string, error) {
	cols, err := db.be.columns(ctx, db, table)
	if err == nil && len(cols) == 0 {
		err = fmt.Errorf("no table %s", table)
	}
	if err != nil {
		return nil, db.fault(fmt.Errorf("read the columns of %s: %w", table, err))
	}
	return cols, nil
}

// scanStrings reads a one-column result.
func scanStrings(rows *sql.Rows, err error) ([]string, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// flag is a boolean as the schema stores it: INTEGER 0 or 1 on both backends (SQLite's
// driver converts Go booleans itself; PostgreSQL's does not into bigint).
func flag(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
