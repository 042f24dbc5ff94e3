package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chainplan/chainplan/internal/pgtest"
	"github.com/chainplan/chainplan/store"
)

// Backends a target lives on.
const (
	sqliteBackend   = "sqlite"
	postgresBackend = "postgres"
)

// env is what every part of the suite shares: how to run chainplan, a scratch folder, and
// the PostgreSQL server (nil when the suite runs on SQLite only).
type env struct {
	cli    []string // the chainplan program and the arguments before the command's own
	cliEnv []string // the environment of every chainplan process
	dir    string   // scratch folder, removed at the end
	pg     *pgtest.Server
	admin  *pgx.Conn // superuser connection to pg, for the probes
	nextID uint64    // the next profile number: every file the suite writes is new
}

// target is one store: a SQLite file or a PostgreSQL schema.
type target struct {
	backend string
	where   string // the file's path or the schema's DSN
}

// freshTarget returns a new, empty store of backend, named after name for SQLite.
func (e *env) freshTarget(ctx context.Context, backend, name string) (target, error) {
	if backend == postgresBackend {
		dsn, err := e.pg.Schema(ctx)
		if err != nil {
			return target{}, fmt.Errorf("new PostgreSQL schema: %w", err)
		}
		return target{backend, dsn}, nil
	}
	path := filepath.Join(e.dir, name+".db")
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(path + suffix); err != nil && !os.IsNotExist(err) {
			return target{}, err
		}
	}
	return target{backend, path}, nil
}

// profile writes a new profile file of the given shape into the scratch folder.
func (e *env) profile(stages, reps int) (profileFile, error) {
	e.nextID++
	return writeProfile(e.dir, e.nextID, stages, reps)
}

// command returns the chainplan command running args against t.
func (e *env) command(t target, args ...string) *exec.Cmd {
	argv := append(append(append([]string{}, e.cli[1:]...), "--db", t.where), args...)
	cmd := exec.Command(e.cli[0], argv...)
	cmd.Env = append(os.Environ(), e.cliEnv...)
	return cmd
}

// commandNoDB returns the chainplan command running args as given (migrate-store names
// its databases itself).
func (e *env) commandNoDB(args ...string) *exec.Cmd {
	cmd := exec.Command(e.cli[0], append(append([]string{}, e.cli[1:]...), args...)...)
	cmd.Env = append(os.Environ(), e.cliEnv...)
	return cmd
}

// must runs chainplan on t to completion (setup steps) and fails unless it exits 0.
func (e *env) must(t target, args ...string) (string, error) {
	cmd := e.command(t, args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("chainplan %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// open opens t with the store package, as the next chainplan process would: SQLite
// recovers a WAL a killed process left, and both backends finish an interrupted schema
// migration. A lock nobody releases makes it fail after the timeout instead of hanging.
func (e *env) open(ctx context.Context, t target) (*store.DB, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return store.Open(ctx, t.where, store.Options{BusyTimeout: 20 * time.Second})
}
