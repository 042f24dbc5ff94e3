package store

import (
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/mattn/go-sqlite3"
)

// Errors of a database that cannot be used as it is, through no fault of chainplan. The
// CLI reports both as bad input (exit status 2), with a hint (FaultError.Hint).
var (
	// ErrDamaged reports a database SQLite finds damaged (a page that does not read as
	// one, a truncated file) or a file that is not a SQLite database at all, and a
	// PostgreSQL store whose server reports corrupted data. Only what the damaged pages
	// held is out of reach; a command that does not read them still runs.
	ErrDamaged = errors.New("chainplan: damaged database")
	// ErrDiskFull reports a write that found the disk full (the SQLite file's, or the
	// PostgreSQL server's): its transaction was rolled back, so the database holds what it
	// held before the command.
	ErrDiskFull = errors.New("chainplan: disk full")
)

// FaultError is an error of the database itself: Kind is ErrDamaged or ErrDiskFull, Err
// the error as the database reported it.
type FaultError struct {
	Where string // the database: its file's absolute path, or its DSN without password
	Kind  error
	Err   error
}

// Error returns Err's message, naming the database unless it does already.
func (e *FaultError) Error() string {
	msg := e.Err.Error()
	if strings.Contains(msg, e.Where) {
		return msg
	}
	return fmt.Sprintf("%s (database %s)", msg, e.Where)
}

func (e *FaultError) Unwrap() []error { return []error{e.Kind, e.Err} }

// Hint says what the user can do.
func (e *FaultError) Hint() string {
	if e.Kind == ErrDiskFull {
		return "the disk holding " + e.Where + " is full: nothing of this command was stored and what the " +
			"database held before is intact; free some space and run the command again"
	}
	if IsPostgres(e.Where) {
		return "the PostgreSQL server reports damaged data in " + e.Where + "; the operation that failed " +
			"changed nothing. Ask its administrator to check the server (pg_amcheck)"
	}
	return e.Where + " is damaged or is not a SQLite database; the operation that failed changed nothing. " +
		"Restore it from a backup, or name another database with --db (ingest creates a new one); " +
		"`chainplan --db FILE sql \"PRAGMA integrity_check\"` lists the damage of a SQLite file that opens"
}

// markFault returns err as a *FaultError of the database at where when it reports a
// damaged database or a full disk, and err unchanged otherwise (nil included).
func markFault(where string, err error) error {
	var fe *FaultError
	if err == nil || errors.As(err, &fe) {
		return err
	}
	if kind := faultKind(err); kind != nil {
		return &FaultError{Where: where, Kind: kind, Err: err}
	}
	return err
}

// fault is markFault for db; a nil db (rows read inside a write transaction, whose
// write marks the error) leaves err as it is.
func (db *DB) fault(err error) error {
	if db == nil {
		return err
	}
	return markFault(db.where, err)
}

// faultKind reads the database's error: SQLite's result codes (CORRUPT, NOTADB, FULL, an
// I/O error whose system error is ENOSPC), PostgreSQL's SQLSTATE classes (53100
// disk_full, XX001 data_corrupted, XX002 index_corrupted), and the system's ENOSPC from
// creating the file or its folder.
func faultKind(err error) error {
	var se sqlite3.Error
	if errors.As(err, &se) {
		switch {
		case se.Code == sqlite3.ErrCorrupt, se.Code == sqlite3.ErrNotADB:
			return ErrDamaged
		case se.Code == sqlite3.ErrFull, se.SystemErrno == syscall.ENOSPC:
			return ErrDiskFull
		}
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "53100":
			return ErrDiskFull
		case "XX001", "XX002":
			return ErrDamaged
		}
	}
	if errors.Is(err, syscall.ENOSPC) {
		return ErrDiskFull
	}
	return nil
}
