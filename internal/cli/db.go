package cli

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/service"
	"github.com/chainplan/chainplan/planner"
	"github.com/chainplan/chainplan/profilearrow"
	"github.com/chainplan/chainplan/store"
)

// This file holds what the commands that use the database share; the sequences
// themselves are internal/service's, which the Python bindings call too.

// openStore opens the existing database of a command that reads it or adds to what it
// holds (show, export, sql, solve --run). A missing database is bad input.
func openStore(cmd *cobra.Command) (*service.Service, error) {
	return openDB(cmd, false)
}

// openStoreCreate opens the database for ingest, creating it when needed.
func openStoreCreate(cmd *cobra.Command) (*service.Service, error) {
	return openDB(cmd, true)
}

// openDB opens the database at --db, else $CHAINPLAN_DB, else ~/.chainplan/chainplan.db
// (service.DBPath).
func openDB(cmd *cobra.Command, create bool) (*service.Service, error) {
	flag := ""
	if f := cmd.Flag("db"); f != nil {
		flag = f.Value.String()
	}
	return service.Open(cmd.Context(), flag, service.Options{Create: create, Version: Version})
}

// resolveRun reads a RUN argument (a run id, or "latest" for the newest run) and returns
// the run's id.
func resolveRun(ctx context.Context, svc *service.Service, arg string) (int64, error) {
	ref, err := service.ParseRunRef(arg)
	if err != nil {
		return 0, err
	}
	return svc.ResolveRun(ctx, ref)
}

// withRun opens the database, resolves the RUN argument arg and calls fn with the run's
// id, closing the database when fn returns: the start of the commands that read one
// stored run (show, export, report).
func withRun(cmd *cobra.Command, arg string, fn func(ctx context.Context, svc *service.Service, id int64) error) error {
	svc, err := openStore(cmd)
	if err != nil {
		return err
	}
	defer svc.Close()
	id, err := resolveRun(cmd.Context(), svc, arg)
	if err != nil {
		return err
	}
	return fn(cmd.Context(), svc, id)
}

// ingestFile reads, validates and stores one profile file. A file that is missing or not
// a valid profile, a damaged database and a full disk are bad input (a *usageError):
// ingest tells those from internal errors.
func ingestFile(ctx context.Context, svc *service.Service, path string) (store.IngestResult, *profilearrow.Profile, error) {
	res, p, err := svc.Ingest(ctx, path)
	switch {
	case errors.Is(err, os.ErrNotExist), errors.Is(err, os.ErrPermission),
		errors.Is(err, profilearrow.ErrInvalidProfile), errors.Is(err, chainplan.ErrSchemaVersion),
		errors.Is(err, chainplan.ErrInputFile),
		errors.Is(err, store.ErrDamaged), errors.Is(err, store.ErrDiskFull):
		return res, p, &usageError{err}
	}
	return res, p, err
}

// solveInput plans what solve was given: the --chain file (a chain or a bundle), the
// towers of several --chain and --loss, or with --run a stored run, whose plan it records
// with the service's parameters and reports on standard error (standard output carries the
// plan alone). It returns the planned document: the plan with its chain, or with its
// bundle for towers.
func solveInput(cmd *cobra.Command, e *env, f solveFlags, req service.Request) (*service.Planned, error) {
	svc, in, err := resolveSource(cmd, f.run, f.towers.source(isMultichainAlgo(f.algo)))
	if err != nil {
		return nil, err
	}
	if svc != nil {
		defer svc.Close()
	}
	if f.algo != "" && !isMultichainAlgo(f.algo) {
		if err := refuseBundle(in, planner.MultichainAlgos()); err != nil {
			return nil, err
		}
	}
	got, err := service.PlanInput(cmd.Context(), in, req)
	if err != nil {
		return nil, err
	}
	if got.PlanID != 0 {
		reportRecorded(e, svc, got.RunID, got.PlanID)
	}
	return got, nil
}

// resolveSource reads what a command was given through the one source envelope, as
// Python's calls are (service.Resolve): with --run (run not "") the stored run, in the
// database --db names, opened here (the caller closes the service returned, nil
// otherwise); else files, the source the command's other flags filled.
func resolveSource(cmd *cobra.Command, run string, files service.Source) (*service.Service, *service.Input, error) {
	if run == "" {
		in, err := service.Resolve(cmd.Context(), nil, files)
		return nil, in, err
	}
	svc, ref, err := openRunStore(cmd, run)
	if err != nil {
		return nil, nil, err
	}
	in, err := service.Resolve(cmd.Context(), svc, service.RunSource(ref))
	if err != nil {
		svc.Close()
		return nil, nil, err
	}
	return svc, in, nil
}

// openRunStore reads the --run value of a command that plans a stored run (solve,
// pipeline) and opens the database that holds it; the caller closes it.
func openRunStore(cmd *cobra.Command, run string) (*service.Service, service.RunRef, error) {
	ref, err := service.ParseRunRef(run)
	if err != nil {
		return nil, ref, err
	}
	svc, err := openStore(cmd)
	if err != nil {
		return nil, ref, err
	}
	return svc, ref, nil
}

// reportRecorded says on standard error where a plan of a stored run was recorded
// (standard output carries the plan alone).
func reportRecorded(e *env, svc *service.Service, runID, planID int64) {
	fmt.Fprintf(e.stderr, "chainplan: recorded as plan %d of run %d in %s\n", planID, runID, svc.Path())
}
