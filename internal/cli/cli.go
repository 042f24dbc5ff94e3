// Package cli is the chainplan command line: one cobra command per file, each parsing its
// flags, calling internal/service and formatting the answer. Run executes it with the given
// arguments and returns the exit status; cmd/chainplan (the standalone program) and the
// Python bindings (pybind.RunCLI, behind the `chainplan` console script of the Python
// package) both call it, so that one Go runtime serves the library and the CLI. See
// `chainplan --help` and docs/CLI.md.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/service"
	"github.com/chainplan/chainplan/planner/milp"
	"github.com/chainplan/chainplan/store"
)

// Version is what `chainplan --version` prints and what the CLI records with the plans it
// stores: the release (chainplan.Version) unless the build stamps another, as the
// Makefile's `make build` does with `git describe`
// (-ldflags "-X github.com/chainplan/chainplan/internal/cli.Version=...").
var Version = chainplan.Version

// Exit statuses of the CLI contract (DESIGN.md, "CLI").
const (
	exitOK         = 0
	exitInternal   = 1
	exitBadInput   = 2
	exitInfeasible = 3
)

// env is what every command writes to.
type env struct {
	stdout io.Writer
	stderr io.Writer
}

// usageError marks bad usage or bad input: exit status 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// Run executes the CLI with args and returns the exit status.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	e := &env{stdout: stdout, stderr: stderr}
	root := newRootCmd(e)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "chainplan:") {
		msg = "chainplan: " + msg
	}
	fmt.Fprintln(stderr, msg)
	var hinted interface{ Hint() string }
	if errors.As(err, &hinted) && hinted.Hint() != "" {
		fmt.Fprintf(stderr, "hint: %s\n", hinted.Hint())
	}
	return exitCode(err)
}

func exitCode(err error) int {
	var ue *usageError
	switch {
	case errors.Is(err, chainplan.ErrInfeasible):
		return exitInfeasible
	case errors.As(err, &ue),
		errors.Is(err, chainplan.ErrInvalidChain),
		errors.Is(err, chainplan.ErrInvalidPlan),
		errors.Is(err, chainplan.ErrUnsupported),
		errors.Is(err, chainplan.ErrNotFound),
		errors.Is(err, chainplan.ErrSchemaVersion),
		errors.Is(err, chainplan.ErrInputFile),
		errors.Is(err, service.ErrBadInput),
		errors.Is(err, milp.ErrNoSolver),
		errors.Is(err, os.ErrNotExist),
		// A damaged database or a full disk is no bug of chainplan (its hint says what to do).
		errors.Is(err, store.ErrDamaged), errors.Is(err, store.ErrDiskFull):
		return exitBadInput
	}
	return exitInternal
}

func newRootCmd(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:   "chainplan",
		Short: "Profile, store and plan memory-saving training schedules for chain models",
		Long: `chainplan computes activation-checkpointing schedules (rotor and baselines) for a
chain of stages measured from a PyTorch model, checks them with an independent simulator,
and shows the whole budget-versus-time trade-off of a chain.

Exit status: 0 success, 2 bad usage or input, 3 infeasible budget, 1 internal error.`,
		Version:       Version,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })
	root.PersistentFlags().String("db", "", "profile database: a SQLite file or a PostgreSQL DSN, postgres://... or host=... dbname=... (default $CHAINPLAN_DB, else ~/.chainplan/chainplan.db)")
	root.AddCommand(
		newSolveCmd(e),
		newSimulateCmd(e),
		newFrontierCmd(e),
		newIngestCmd(e),
		newProfilesCmd(e),
		newShowCmd(e),
		newShowPlanCmd(e),
		newExportCmd(e),
		newSQLCmd(e),
		newImportCmd(e),
		newPipelineCmd(e),
		newPipesimCmd(e),
		newPlotCmd(e),
		newReportCmd(e),
		newAdviseCmd(e),
		newSearch3DCmd(e),
		newAdviceCmd(e),
		newClusterCmd(e),
		newMigrateStoreCmd(e),
	)
	for _, c := range root.Commands() {
		if c.Args == nil {
			c.Args = noArgs
		}
	}
	return root
}

// noArgs rejects positional arguments and unknown subcommands as usage errors.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		if cmd.HasSubCommands() {
			return usagef("unknown command %q for %q (see %s --help)", args[0], cmd.CommandPath(), cmd.CommandPath())
		}
		return usagef("%s takes no arguments, got %q", cmd.CommandPath(), args)
	}
	return nil
}
