package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/service"
	"github.com/chainplan/chainplan/store"
)

func newShowPlanCmd(e *env) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "show-plan PLAN",
		Short: "Show a stored plan: the document solve printed, or its text form",
		Long: `Show plan PLAN (a plan id, see the plans table in chainplan sql): in json, the whole plan
document as chainplan solve printed it when it was computed (offload section included);
in text, its summary with the run it was computed from and its operations.

Plans stored before the database kept whole documents (schema migration 0003) show the
document rebuilt from their columns: an offloading plan's transfers were not kept.`,
		Example: `  chainplan show-plan 7
  chainplan show-plan 7 --format json > plan.json`,
		Args: exactlyOneArg("show-plan", "PLAN"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format, "text", "json"); err != nil {
				return err
			}
			db, err := openStore(cmd)
			if err != nil {
				return err
			}
			defer db.Close()
			if done, err := showStoredPipelinePlan(cmd.Context(), e, db, args[0], format); done {
				return err
			}
			if done, err := showStoredTowersPlan(cmd.Context(), e, db, args[0], format); done {
				return err
			}
			sp, c, err := loadStoredPlan(cmd.Context(), db, args[0])
			if err != nil {
				return err
			}
			if format == "json" {
				return writeJSON(e.stdout, sp.Plan)
			}
			fmt.Fprintf(e.stdout, "plan        %d of run %d, %s, chainplan %s\n", sp.ID, sp.RunID,
				sp.CreatedAt.Format("2006-01-02 15:04:05"), sp.Version)
			if sp.Rebuilt {
				fmt.Fprintln(e.stdout, "stored      before migration 0003: rebuilt from its columns")
			}
			prm, err := service.ParamsOf(sp.Params, &sp.Plan)
			if err != nil {
				return err
			}
			writeRequestText(e.stdout, prm)
			writePlanText(e.stdout, c, &sp.Plan)
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	return cmd
}

// writeRequestText prints what a stored plan was asked for (its parameters).
func writeRequestText(w io.Writer, prm service.Params) {
	fmt.Fprintf(w, "request     budget %s", prm.Budget)
	if prm.Segments > 0 {
		fmt.Fprintf(w, ", %d segments", prm.Segments)
	}
	if prm.Bandwidth > 0 {
		fmt.Fprintf(w, ", bandwidth %.6g bytes/s", prm.Bandwidth)
	}
	fmt.Fprintf(w, ", from %s\n", prm.Source)
}

// exactlyOneArg accepts exactly one positional argument, named what in messages.
func exactlyOneArg(command, what string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != 1 {
			return usagef("%s takes one %s argument, got %d", command, what, len(args))
		}
		return nil
	}
}

// loadStoredPlan reads a PLAN argument and returns the stored plan with the chain of the
// run it was computed from.
func loadStoredPlan(ctx context.Context, db *service.Service, arg string) (*store.StoredPlan, *chainplan.Chain, error) {
	id, err := strconv.ParseInt(arg, 10, 64)
	if err != nil || id < 1 {
		return nil, nil, usagef("PLAN must be a plan id (a positive integer), got %q", arg)
	}
	sp, err := db.Store().Plan(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	c, err := db.RunChain(ctx, sp.RunID)
	if err != nil {
		return nil, nil, err
	}
	return sp, c, nil
}
