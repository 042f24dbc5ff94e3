package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/chainplan/chainplan/internal/service"
	"github.com/chainplan/chainplan/store"
)

func newMigrateStoreCmd(e *env) *cobra.Command {
	var from, to, format string
	cmd := &cobra.Command{
		Use:   "migrate-store --from SQLITE_PATH --to DSN",
		Short: "Copy a local profile database into a team's PostgreSQL store",
		Long: `Copy the history of one profile database into another, usually a local SQLite file
into the PostgreSQL store a team shares (--to postgres://user@host/db): every run with its
stages and measurements, its plans, their executions, measured bandwidths and pipeline
simulations.

Runs the destination holds already (the same profile file, by content hash) are skipped,
and what they gained since (plans, executions, bandwidths, simulations) is added, so copying again
after more local work adds only that work, and copying twice adds nothing. Each run is
copied in one transaction: an interrupted copy leaves whole runs only, and running the
command again resumes it. Runs get the destination's ids. The source must exist; the
destination is created when missing (for PostgreSQL: the schema and its tables). Both
are migrated to this chainplan's schema first.`,
		Example: `  chainplan migrate-store --from ~/.chainplan/chainplan.db --to postgres://ann@db.lab/chainplan
  chainplan migrate-store --from lab.db --to "postgres://db.lab/chainplan?search_path=vision" --format json`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(format, "text", "json"); err != nil {
				return err
			}
			if from == "" || to == "" {
				return usagef("migrate-store needs --from (the database to copy) and --to (the database to copy into)")
			}
			stats, err := service.MigrateStore(cmd.Context(), from, to)
			if err != nil {
				return err
			}
			if format == "json" {
				return writeJSON(e.stdout, stats)
			}
			fmt.Fprintln(e.stdout, copySummary(stats, from, to))
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "the database to copy: a SQLite file (or a postgres:// DSN)")
	cmd.Flags().StringVar(&to, "to", "", "the database to copy into: a postgres:// DSN (or a SQLite file)")
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	return cmd
}

// copySummary says in one line what a copy did.
func copySummary(s store.CopyStats, from, to string) string {
	return fmt.Sprintf("copied %d runs (%d stages, %d measurements), %d plans, %d executions, %d bandwidths, "+
		"%d simulations, %d advice (%d measured runs) from %s to %s; skipped %d runs, %d plans and %d advice already there",
		s.Runs, s.Stages, s.Measurements, s.Plans, s.Executions, s.Bandwidths, s.Simulations, s.Advice, s.AdviceMeasurements,
		store.RedactDSN(from), store.RedactDSN(to), s.RunsSkipped, s.PlansSkipped, s.AdviceSkipped)
}
