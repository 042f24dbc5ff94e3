package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/chainplan/chainplan"
)

// DefaultBusyTimeout is how long a statement waits for a lock another process holds
// before Open or a write gives up.
const DefaultBusyTimeout = 30 * time.Second

// timeFormat is the layout of every timestamp column: RFC 3339 in UTC with milliseconds,
// fixed width, so that text order is time order.
const timeFormat = "2006-01-02T15:04:05.000Z"

// DB is an open chainplan database. It is safe for concurrent use by several goroutines;
// several processes may open the same file at once.
type DB struct {
	path        string
	w           *sql.DB // the one writer connection
	r           *sql.DB // read-only connections with the read authorizer
	busyTimeout time.Duration
}

// Options controls Open. The zero value creates the database if needed and waits up to
// DefaultBusyTimeout for locks.
type Options struct {
	// MustExist makes Open fail with an error wrapping chainplan.ErrNotFound when there is
	// no database at the path, instead of creating one. Read-only commands set it.
	MustExist bool
	// BusyTimeout is how long a statement waits for another process's lock
	// (0: DefaultBusyTimeout).
	BusyTimeout time.Duration
}

// Open opens the database at path, creating it and its directory unless opts.MustExist,
// and migrates its schema forward to the newest version this build knows. A database
// written by a newer chainplan fails with an error wrapping chainplan.ErrSchemaVersion.
func Open(ctx context.Context, path string, opts Options) (*DB, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	_, statErr := os.Stat(abs)
	if errors.Is(statErr, os.ErrNotExist) {
		if opts.MustExist {
			return nil, notFound("no database at %s (ingest a profile first)", abs)
		}
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			return nil, fmt.Errorf("open database %s: %w", abs, err)
		}
	} else if statErr != nil {
		return nil, fmt.Errorf("open database %s: %w", abs, statErr)
	}
	busy := opts.BusyTimeout
	if busy <= 0 {
		busy = DefaultBusyTimeout
	}
	db := &DB{path: abs, busyTimeout: busy}
	// Writer: WAL, foreign keys, BEGIN IMMEDIATE so that a transaction takes the write
	// lock up front (and waits for it) instead of failing when it upgrades a read lock.
	// synchronous=NORMAL is safe in WAL mode: a crash loses no committed transaction;
	// a power loss may lose the last ones but never corrupts the file.
	db.w, err = sql.Open("sqlite3", dsn(abs, busy, "rwc",
		"_journal_mode=WAL", "_foreign_keys=1", "_txlock=immediate", "_synchronous=NORMAL"))
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", abs, err)
	}
	db.w.SetMaxOpenConns(1)
	db.w.SetMaxIdleConns(1)
	db.w.SetConnMaxLifetime(0)
	db.r, err = sql.Open(readOnlyDriver, dsn(abs, busy, "ro", "_query_only=1"))
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
	if err := db.migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open database %s: %w", abs, err)
	}
	return db, nil
}

// dsn builds a go-sqlite3 data source name for path (a URI, so that any character of the
// path survives) with the given mode and parameters.
func dsn(path string, busy time.Duration, mode string, params ...string) string {
	u := url.URL{Path: path}
	q := fmt.Sprintf("mode=%s&_busy_timeout=%d", mode, busy.Milliseconds())
	for _, p := range params {
		q += "&" + p
	}
	return "file:" + u.EscapedPath() + "?" + q
}

// Path returns the absolute path of the database file.
func (db *DB) Path() string { return db.path }

// Close closes every connection. It checkpoints the WAL when this is the last connection
// to the file, as SQLite does.
func (db *DB) Close() error {
	var errs []error
	if db.r != nil {
		errs = append(errs, db.r.Close())
	}
	if db.w != nil {
		errs = append(errs, db.w.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close database %s: %w", db.path, err)
	}
	return nil
}

// isBusy reports whether err is SQLite's "database is locked" or "table is locked", which
// another process's transaction causes and which retrying resolves.
func isBusy(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked)
}

// write runs fn in one write transaction (BEGIN IMMEDIATE) and commits it. SQLite's busy
// handler already waits up to busyTimeout for the lock; when SQLITE_BUSY still comes back
// (a WAL snapshot conflict does not consult the busy handler), the whole transaction is
// retried with a jittered backoff until busyTimeout has passed.
func (db *DB) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	deadline := time.Now().Add(db.busyTimeout)
	for attempt := 0; ; attempt++ {
		err := db.tryWrite(ctx, fn)
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			if isBusy(err) {
				return fmt.Errorf("database %s stayed locked by another process for %v: %w", db.path, db.busyTimeout, err)
			}
			return err
		}
		backoff := time.Duration(1+rand.IntN(10<<min(attempt, 4))) * time.Millisecond
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
	}
}

func (db *DB) tryWrite(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback() // the error that matters is fn's
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// formatTime writes t as a timestamp column value.
func formatTime(t time.Time) string { return t.UTC().Format(timeFormat) }

// parseTime reads a timestamp column value.
func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("bad timestamp %q in the database: %w", s, err)
	}
	return t, nil
}

// notFoundError is an error wrapping chainplan.ErrNotFound whose message leaves out the
// sentinel's text.
type notFoundError struct{ msg string }

func (e *notFoundError) Error() string { return e.msg }
func (e *notFoundError) Unwrap() error { return chainplan.ErrNotFound }

// notFound returns a formatted error wrapping chainplan.ErrNotFound.
func notFound(format string, args ...any) error {
	return &notFoundError{fmt.Sprintf(format, args...)}
}
