package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/history"
	"github.com/chainplan/chainplan/profiler"
	"github.com/chainplan/chainplan/store"
)

// dbPath returns the database file a command uses: --db, else $CHAINPLAN_DB, else
// ~/.chainplan/chainplan.db.
func dbPath(cmd *cobra.Command) (string, error) {
	if f := cmd.Flag("db"); f != nil && f.Value.String() != "" {
		return f.Value.String(), nil
	}
	p, err := history.DefaultDBPath()
	if err != nil {
		return "", &usageError{err}
	}
	return p, nil
}

// openStore opens the existing database of a command that reads it or adds to what it
// holds (show, export, sql, solve --run). A missing database is bad input.
func openStore(cmd *cobra.Command) (*store.DB, error) {
	return openDB(cmd, store.Options{MustExist: true})
}

// openStoreCreate opens the database for ingest, creating it when needed.
func openStoreCreate(cmd *cobra.Command) (*store.DB, error) {
	return openDB(cmd, store.Options{})
}

func openDB(cmd *cobra.Command, opts store.Options) (*store.DB, error) {
	path, err := dbPath(cmd)
	if err != nil {
		return nil, err
	}
	return store.Open(cmd.Context(), path, opts)
}

// resolveRun reads a RUN argument: a run id, or "latest" for the newest run.
func resolveRun(ctx context.Context, db *store.DB, arg string) (int64, error) {
	if arg == "latest" {
		return db.LatestRunID(ctx)
	}
	id, err := strconv.ParseInt(arg, 10, 64)
	if err != nil || id < 1 {
		return 0, usagef("RUN must be a run id (a positive integer, see chainplan profiles) or \"latest\", got %q", arg)
	}
	return id, nil
}

// loadRunChain returns the chain of a stored run (see history.RunChain).
func loadRunChain(ctx context.Context, db *store.DB, runID int64) (*chainplan.Chain, error) {
	return history.RunChain(ctx, db, runID)
}

// recordPlan stores a plan computed from run runID's chain, with the solver parameters
// that produced it, and returns the plan id.
func recordPlan(ctx context.Context, db *store.DB, runID int64, plan *chainplan.Plan, params map[string]any) (int64, error) {
	return db.RecordPlan(ctx, runID, plan, params, Version)
}

// ingestFile reads, validates and stores one profile file (see history.IngestFile). A
// file that is missing or not a valid profile is bad input (a *usageError).
func ingestFile(ctx context.Context, db *store.DB, path string) (store.IngestResult, *profiler.Profile, error) {
	res, p, err := history.IngestFile(ctx, db, path)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
		return res, p, &usageError{err}
	}
	return res, p, badProfile(err)
}

// badProfile makes a profile reading error bad input (exit status 2).
func badProfile(err error) error {
	if errors.Is(err, profiler.ErrInvalidProfile) || errors.Is(err, chainplan.ErrSchemaVersion) {
		return &usageError{err}
	}
	return err
}

// storedRun is the stored profile `solve --run` plans from.
type storedRun struct {
	db *store.DB
	id int64
}

// solveInput returns the chain `solve` plans: the --chain file, or with --run the chain of
// a stored run, together with the open database to record the plan in (nil for a file).
func solveInput(cmd *cobra.Command, f solveFlags) (*chainplan.Chain, *storedRun, error) {
	if f.run == "" {
		c, err := chainplan.ReadChain(f.chain)
		return c, nil, err
	}
	db, err := openStore(cmd)
	if err != nil {
		return nil, nil, err
	}
	id, err := resolveRun(cmd.Context(), db, f.run)
	if err == nil {
		var c *chainplan.Chain
		if c, err = loadRunChain(cmd.Context(), db, id); err == nil {
			return c, &storedRun{db: db, id: id}, nil
		}
	}
	db.Close()
	return nil, nil, err
}

// record stores the plan solve computed, with the options that produced it, and says so
// on standard error (standard output carries the plan alone).
func (s *storedRun) record(ctx context.Context, e *env, p *chainplan.Plan, f solveFlags) error {
	// The slots the plan was solved with: an offloading algorithm without --slots uses
	// its own default, not the flag's.
	slots := f.slots
	if p.Slots > 0 {
		slots = p.Slots
	}
	params := map[string]any{"algo": f.algo, "budget": f.budget, "slots": slots}
	if f.segments > 0 {
		params["segments"] = f.segments
	}
	if p.Segments > 0 {
		params["chosen_segments"] = p.Segments
	}
	id, err := recordPlan(ctx, s.db, s.id, p, params)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "chainplan: recorded as plan %d of run %d in %s\n", id, s.id, s.db.Path())
	return nil
}
