package main

import (
	"bufio"
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/chainplan/chainplan/internal/pgtest"
)

// A probe reports whether process pid is inside a write transaction of target t, from
// outside the process, just before the suite kills it: where the kill landed.
//
// SQLite in WAL mode: a writer holds the WAL write lock, a POSIX lock on byte 120 of the
// -shm file (SQLite's wal.c: WAL_WRITE_LOCK, the first lock byte after the 120-byte
// index header), from BEGIN IMMEDIATE to COMMIT or ROLLBACK; /proc/locks lists it with
// the holder's pid. PostgreSQL: the server's pg_stat_activity shows a backend of the
// store's role in an explicit transaction or holding a transaction id.
func (e *env) inWrite(ctx context.Context, t target, pid int) bool {
	if t.backend == postgresBackend {
		return e.pgInWrite(ctx)
	}
	return sqliteInWrite(t.where, pid)
}

// walWriteLock is the byte of the -shm file a SQLite writer locks (wal.c).
const walWriteLock = 120

func sqliteInWrite(path string, pid int) bool {
	var st syscall.Stat_t
	if syscall.Stat(path+"-shm", &st) != nil {
		return false
	}
	f, err := os.Open("/proc/locks")
	if err != nil {
		return false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		// "1: POSIX  ADVISORY  WRITE 1234 00:2f:5678 120 120"
		fields := strings.Fields(s.Text())
		if len(fields) < 8 || fields[1] != "POSIX" || fields[3] != "WRITE" || fields[4] != strconv.Itoa(pid) {
			continue
		}
		dev := strings.Split(fields[5], ":")
		ino, _ := strconv.ParseUint(dev[len(dev)-1], 10, 64)
		start, _ := strconv.ParseInt(fields[6], 10, 64)
		end := fields[7]
		if ino == st.Ino && start <= walWriteLock && (end == "EOF" || atLeast(end, walWriteLock)) {
			return true
		}
	}
	return false
}

func atLeast(s string, v int64) bool {
	n, err := strconv.ParseInt(s, 10, 64)
	return err == nil && n >= v
}

func (e *env) pgInWrite(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var n int
	err := e.admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE usename = $1
		AND (backend_xid IS NOT NULL OR state LIKE 'idle in transaction%')`, pgtest.Role).Scan(&n)
	return err == nil && n > 0
}
