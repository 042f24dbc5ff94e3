package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/chainplan/chainplan"
)

// applicationID marks a SQLite file as a chainplan database ("cpln").
const applicationID = 0x63706c6e

// sqliteBackend is the store on one SQLite file, the default: WAL mode, one writer
// connection whose transactions take the write lock up front, read-only connections with
// an authorizer for users' queries.
type sqliteBackend struct{}

var _ backend = sqliteBackend{}

// openSQLite opens the database file at path, creating it and its folder unless
// mustExist.
func openSQLite(ctx context.Context, path string, mustExist bool, busy time.Duration) (*DB, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	st, statErr := os.Stat(abs)
	if errors.Is(statErr, os.ErrNotExist) {
		if mustExist {
			return nil, notFound("no database at %s (ingest a profile first)", abs)
		}
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			return nil, fmt.Errorf("open database %s: %w", abs, err)
		}
	} else if statErr != nil {
		return nil, fmt.Errorf("open database %s: %w", abs, statErr)
	} else if mustExist && st.Mode().IsRegular() && st.Size() == 0 && emptyWAL(abs) {
		// SQLite reads an empty file as an empty database, and opening it would write a
		// schema into it: a command that reads refuses it, as it refuses a missing file.
		return nil, notFound("no database at %s: the file is empty (ingest a profile first)", abs)
	}
	db := &DB{where: abs, be: sqliteBackend{}, busyTimeout: busy}
	// Writer: WAL, foreign keys, BEGIN IMMEDIATE so that a transaction takes the write
	// lock up front (and waits for it) instead of failing when it upgrades a read lock.
	// synchronous=NORMAL is safe in WAL mode: a crash loses no committed transaction;
	// a power loss may lose the last ones but never corrupts the file.
	db.w, err = sql.Open("sqlite3", sqliteDSN(abs, busy, "rwc",
		"_journal_mode=WAL", "_foreign_keys=1", "_txlock=immediate", "_synchronous=NORMAL"))
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", abs, err)
	}
	db.w.SetMaxOpenConns(1)
	db.w.SetMaxIdleConns(1)
	db.w.SetConnMaxLifetime(0)
	db.r, err = sql.Open(readOnlyDriver, sqliteDSN(abs, busy, "ro", "_query_only=1"))
	if err != nil {
		db.w.Close()
		return nil, fmt.Errorf("open database %s: %w", abs, err)
	}
	if statErr != nil {
		// A new file: the writer creates it (read-only connections cannot).
		if err := db.w.PingContext(ctx); err != nil {
			db.Close()
			return nil, fmt.Errorf("create database %s: %w", abs, err)
		}
	}
	return db, nil
}

// emptyWAL reports whether the database at path has no write-ahead log, or an empty one.
// A process killed before its first checkpoint leaves an empty database file whose
// pages are all in the log.
func emptyWAL(path string) bool {
	st, err := os.Stat(path + "-wal")
	return err != nil || st.Size() == 0
}

// sqliteDSN builds a go-sqlite3 data source name for path (a URI, so that any character
// of the path survives) with the given mode and parameters.
func sqliteDSN(path string, busy time.Duration, mode string, params ...string) string {
	u := url.URL{Path: path}
	q := fmt.Sprintf("mode=%s&_busy_timeout=%d", mode, busy.Milliseconds())
	for _, p := range params {
		q += "&" + p
	}
	return "file:" + u.EscapedPath() + "?" + q
}

func (sqliteBackend) dialect() string { return "sqlite" }

func (sqliteBackend) bind(query string) string { return query }

// retryable reports SQLite's "database is locked" or "table is locked", which another
// process's transaction causes and which retrying resolves. SQLite's busy handler already
// waited for the lock; a WAL snapshot conflict does not consult it.
func (sqliteBackend) retryable(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked)
}

// version reads PRAGMA user_version through a read-only connection, so that opening an
// up-to-date database for queries never touches the writer, unless that connection cannot
// open the file (a WAL left by a crashed process needs recovery, which a read-only
// connection cannot run).
func (sqliteBackend) version(ctx context.Context, db *DB) (int, error) {
	var v int
	err := db.r.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v)
	if err != nil && ctx.Err() == nil {
		err = db.w.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v)
	}
	return v, err
}

// lockSchema: the migration transaction is BEGIN IMMEDIATE, so it holds the write lock
// already. A file is chainplan's when it carries applicationID, or is empty.
func (sqliteBackend) lockSchema(ctx context.Context, tx *sql.Tx) (int, error) {
	var v, app, objects int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	if err := tx.QueryRowContext(ctx, "PRAGMA application_id").Scan(&app); err != nil {
		return 0, fmt.Errorf("read application id: %w", err)
	}
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&objects); err != nil {
		return 0, fmt.Errorf("read schema: %w", err)
	}
	if app != applicationID && (v != 0 || objects != 0) {
		return 0, fmt.Errorf("%w: not a chainplan database (application_id %#x, user_version %d, %d schema objects)",
			chainplan.ErrSchemaVersion, app, v, objects)
	}
	return v, nil
}

func (sqliteBackend) setVersion(ctx context.Context, tx *sql.Tx, version int) error {
	// PRAGMA arguments cannot be bound; both values are integers this code controls.
	_, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d; PRAGMA application_id = %d", version, applicationID))
	return err
}

// query runs a user's statement on a read-only connection (mode=ro, query_only and the
// read authorizer, sqlite_readonly.go).
// query runs a user's statement on a read-only connection (sqlite_readonly.go) as one
// prepared statement: sqliteStatement has refused a text of several, and a prepared
// statement runs its first statement only whatever the text holds. database/sql then
// counts the arguments against the statement's placeholders.
func (sqliteBackend) query(ctx context.Context, db *DB, query string, args []any) (*Rows, error) {
	query, err := sqliteStatement(query)
	if err != nil {
		return nil, err
	}
	conn, err := db.r.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("query: %w", err)
	}
	stmt, err := conn.PrepareContext(ctx, query)
	if err != nil {
		conn.Close()
		return nil, sqliteQueryError(err)
	}
	rows, err := stmt.QueryContext(ctx, args...)
	if err != nil {
		stmt.Close()
		conn.Close()
		return nil, sqliteQueryError(err)
	}
	return newRows(rows, sqliteQueryError, nil, stmt.Close, conn.Close)
}

func (sqliteBackend) columns(ctx context.Context, db *DB, table string) ([]string, error) {
	if table == "" {
		return scanStrings(db.r.QueryContext(ctx, "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name"))
	}
	return scanStrings(db.r.QueryContext(ctx, "SELECT name FROM pragma_table_info(?) ORDER BY cid", table))
}
