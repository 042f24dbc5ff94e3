package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"time"

	"github.com/chainplan/chainplan"
)

// DefaultBusyTimeout is how long a write waits for a lock another process holds, or keeps
// retrying after conflicts with other writers, before it gives up.
const DefaultBusyTimeout = 30 * time.Second

// timeFormat is the layout of every timestamp column: RFC 3339 in UTC with milliseconds,
// fixed width, so that text order is time order.
const timeFormat = "2006-01-02T15:04:05.000Z"

// DB is an open chainplan database: a SQLite file or a PostgreSQL store. It is safe for
// concurrent use by several goroutines; several processes (on several hosts, for
// PostgreSQL) may open the same database at once.
type DB struct {
	where       string  // the file's absolute path, or the DSN without its password
	be          backend // what differs between SQLite and PostgreSQL
	w           *sql.DB // writes (SQLite: the one writer connection)
	r           *sql.DB // reads (SQLite: read-only connections with the read authorizer)
	busyTimeout time.Duration
}

// Options controls Open. The zero value creates the database if needed and waits up to
// DefaultBusyTimeout for locks.
type Options struct {
	// MustExist makes Open fail with an error wrapping chainplan.ErrNotFound when there is
	// no database at the path (no chainplan store in the PostgreSQL schema), instead of
	// creating one. Read-only commands set it.
	MustExist bool
	// BusyTimeout is how long a write waits for another process's lock, and keeps retrying
	// a transaction that lost a conflict with another writer (0: DefaultBusyTimeout).
	BusyTimeout time.Duration
}

// Open opens the database at target and migrates its schema forward to the newest version
// this build knows. target is a PostgreSQL DSN (postgres://user@host/db or
// host=... dbname=..., IsPostgres) or the path of a SQLite file, created with its folder
// unless opts.MustExist (target.go has the rule). A database written by a newer chainplan
// fails with an error wrapping chainplan.ErrSchemaVersion; a DSN that does not parse, with
// one wrapping ErrBadDSN; a name that is neither a DSN nor a path, with one wrapping
// ErrBadTarget.
func Open(ctx context.Context, target string, opts Options) (*DB, error) {
	busy := opts.BusyTimeout
	if busy <= 0 {
		busy = DefaultBusyTimeout
	}
	kind, err := kindOf(target)
	if err != nil {
		return nil, err
	}
	var db *DB
	where := RedactDSN(target)
	if kind == sqliteFile {
		if abs, err := filepath.Abs(target); err == nil {
			where = abs
		}
		db, err = openSQLite(ctx, target, opts.MustExist, busy)
	} else {
		db, err = openPostgres(ctx, target, opts.MustExist, busy)
	}
	if err != nil {
		return nil, markFault(where, err)
	}
	if err := db.migrate(ctx); err != nil {
		db.Close()
		return nil, db.fault(fmt.Errorf("open database %s: %w", db.where, err))
	}
	return db, nil
}

// Path returns where the database is: the absolute path of its file, or for PostgreSQL
// its DSN without the password. Messages name the database by it.
func (db *DB) Path() string { return db.where }

// Backend names the database the store runs on: "sqlite" or "postgres".
func (db *DB) Backend() string { return db.be.dialect() }

// Close closes every connection. It checkpoints the WAL when this is the last connection
// to a SQLite file, as SQLite does.
func (db *DB) Close() error {
	var errs []error
	if db.r != nil && db.r != db.w {
		errs = append(errs, db.r.Close())
	}
	if db.w != nil {
		errs = append(errs, db.w.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close database %s: %w", db.where, err)
	}
	return nil
}

// write runs fn in one write transaction and commits it. A transaction that fails because
// of another writer (be.retryable: SQLite's lock, which its busy handler already waited
// for; PostgreSQL's serialization failure or deadlock) runs again whole, after a jittered
// backoff, until busyTimeout has passed.
func (db *DB) write(ctx context.Context, fn func(tx txn) error) error {
	deadline := time.Now().Add(db.busyTimeout)
	for attempt := 0; ; attempt++ {
		err := db.tryWrite(ctx, fn)
		if err == nil || !db.be.retryable(err) || time.Now().After(deadline) {
			if err != nil && db.be.retryable(err) {
				return fmt.Errorf("database %s stayed locked by another process for %v: %w", db.where, db.busyTimeout, err)
			}
			return db.fault(err)
		}
		backoff := time.Duration(1+rand.IntN(10<<min(attempt, 4))) * time.Millisecond
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
	}
}

func (db *DB) tryWrite(ctx context.Context, fn func(tx txn) error) error {
	// The transaction runs on a connection held for it, so that a backend's bulk copy can
	// reach the same session (bulk.go).
	conn, err := db.w.Conn(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(txn{tx, db.be, conn}); err != nil {
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
