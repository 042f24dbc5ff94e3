package store

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/mattn/go-sqlite3"
)

// faultKind reads each database's way of saying that its file is damaged or its disk
// full, and nothing else.
func TestFaultKind(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want error
	}{
		{"SQLite CORRUPT", sqlite3.Error{Code: sqlite3.ErrCorrupt}, ErrDamaged},
		{"SQLite NOTADB", sqlite3.Error{Code: sqlite3.ErrNotADB}, ErrDamaged},
		{"SQLite FULL", sqlite3.Error{Code: sqlite3.ErrFull}, ErrDiskFull},
		{"SQLite I/O error ENOSPC", sqlite3.Error{Code: sqlite3.ErrIoErr, SystemErrno: syscall.ENOSPC}, ErrDiskFull},
		{"SQLite I/O error EIO", sqlite3.Error{Code: sqlite3.ErrIoErr, SystemErrno: syscall.EIO}, nil},
		{"SQLite BUSY", sqlite3.Error{Code: sqlite3.ErrBusy}, nil},
		{"PostgreSQL disk_full", &pgconn.PgError{Code: "53100"}, ErrDiskFull},
		{"PostgreSQL data_corrupted", &pgconn.PgError{Code: "XX001"}, ErrDamaged},
		{"PostgreSQL unique_violation", &pgconn.PgError{Code: "23505"}, nil},
		{"mkdir ENOSPC", &fs.PathError{Op: "mkdir", Path: "/x", Err: syscall.ENOSPC}, ErrDiskFull},
		{"wrapped", fmt.Errorf("commit: %w", sqlite3.Error{Code: sqlite3.ErrFull}), ErrDiskFull},
		{"other", errors.New("boom"), nil},
	}
	for _, tt := range tests {
		if got := faultKind(tt.err); got != tt.want {
			t.Errorf("%s: faultKind = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// A FaultError names its database once, keeps the database's error and its kind
// reachable, and is not wrapped twice.
func TestFaultErrorMessage(t *testing.T) {
	full := sqlite3.Error{Code: sqlite3.ErrFull}
	err := markFault("/data/c.db", fmt.Errorf("record plan: %w", full))
	if got, want := err.Error(), "record plan: database or disk is full (database /data/c.db)"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
	var se sqlite3.Error
	if !errors.Is(err, ErrDiskFull) || !errors.As(err, &se) {
		t.Fatalf("%v: want ErrDiskFull and the sqlite3.Error reachable", err)
	}
	named := markFault("/data/c.db", fmt.Errorf("open database /data/c.db: %w", full))
	if strings.Count(named.Error(), "/data/c.db") != 1 {
		t.Fatalf("Error() = %q names the database twice", named.Error())
	}
	if again := markFault("/other.db", err); again != err {
		t.Fatalf("markFault wrapped a FaultError again: %v", again)
	}
	if markFault("/data/c.db", nil) != nil {
		t.Fatal("markFault(nil) is not nil")
	}
}
