// Package service is the one sequence of store and planner calls that the CLI
// (internal/cli) and the Python bindings (pybind) share: where the database lives
// (DBPath), storing a profile (Ingest), naming a stored run (RunRef, ResolveRun), planning
// it and recording the plan with one parameter set (PlanRun, Params), and recording what a
// plan measured when it ran (RecordExecution).
//
// The front ends only parse their arguments, call one of these and format the result; what
// is stored does not depend on which of them asked, except for Params.Source.
package service

import (
	"context"
	"errors"
	"strings"

	"github.com/chainplan/chainplan/store"
)

// ErrBadInput marks an argument the caller got wrong (a malformed run reference, a bad
// measurement, no home directory for the default database): the CLI exits with status 2,
// pybind reports it as a bad request. The message names the argument.
var ErrBadInput = errors.New("bad input")

// inputError is an error wrapping ErrBadInput whose message leaves out the sentinel's.
type inputError struct{ msg string }

func (e *inputError) Error() string { return e.msg }
func (e *inputError) Unwrap() error { return ErrBadInput }

// Options controls Open. The zero value opens an existing database.
type Options struct {
	// Create makes Open create the database and its folder when missing (ingest);
	// otherwise a missing database fails with an error wrapping chainplan.ErrNotFound,
	// so that a command that only reads never leaves an empty file behind.
	Create bool
	// Version is the chainplan version recorded with every plan (plans.chainplan_version).
	Version string
}

// Service is an open database and the operations on it that the front ends share. It is
// safe for concurrent use, as store.DB is.
type Service struct {
	db      *store.DB
	version string
}

// Open opens (and migrates) the database at path, a SQLite file or a PostgreSQL DSN, or
// when path is empty the default one (DefaultDBPath: $CHAINPLAN_DB, else
// ~/.chainplan/chainplan.db). A DSN that does not parse, and a name that is neither a DSN
// nor a path (store.CheckTarget), are bad input.
func Open(ctx context.Context, path string, opts Options) (*Service, error) {
	if path == "" {
		p, err := DefaultDBPath()
		if err != nil {
			return nil, err
		}
		path = p
	}
	db, err := store.Open(ctx, path, store.Options{MustExist: !opts.Create})
	if errors.Is(err, store.ErrBadDSN) || errors.Is(err, store.ErrBadTarget) {
		return nil, &inputError{strings.TrimPrefix(err.Error(), "chainplan: ")}
	}
	if err != nil {
		return nil, err
	}
	return &Service{db: db, version: opts.Version}, nil
}

// Store returns the database itself, for the read-only questions that are one store call
// and no sequence (chainplan sql, profiles, show).
func (s *Service) Store() *store.DB { return s.db }

// Path returns where the database is: the absolute path of its file, or its DSN without
// the password.
func (s *Service) Path() string { return s.db.Path() }

// Close closes the database.
func (s *Service) Close() error { return s.db.Close() }
