package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
)

func newIngestCmd(e *env) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "ingest FILE...",
		Short: "Store profile files (Arrow, chainplan.profile/v1) in the profile database",
		Long: `Read, validate and store profile files in the profile database (--db, else
$CHAINPLAN_DB, else ~/.chainplan/chainplan.db, created when missing): a SQLite file, or a
team's PostgreSQL store named by a postgres:// DSN.

Each file is stored in one transaction, all of it or nothing. Ingest is idempotent: a file
whose content was stored before is reported as "existing" with its run id, and stored
once. Any number of ingests may run at once on the same database (from any number of
hosts, on PostgreSQL). A file that is not a
valid profile is reported with the column and row at fault and the others are still
ingested; the exit status is then 2. docs/formats.md describes the file format.`,
		Example: `  chainplan ingest prof/resnet50-bs32.arrow
  chainplan --db lab.db ingest prof/*.arrow
  chainplan ingest --format json run.feather`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("ingest needs at least one FILE (a profile written by chainplan.profile)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runIngest(cmd, e, args, format)
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	return cmd
}

// ingestReport is what ingest reports per file (the json format's objects).
type ingestReport struct {
	File     string `json:"file"`
	RunID    int64  `json:"run_id,omitempty"`
	Existing bool   `json:"existing"`
	Model    string `json:"model,omitempty"`
	Stages   int    `json:"stages,omitempty"`
	Rows     int    `json:"rows"`
	Error    string `json:"error,omitempty"`
}

func runIngest(cmd *cobra.Command, e *env, files []string, format string) error {
	if err := checkFormat(format, "text", "json"); err != nil {
		return err
	}
	db, err := openStoreCreate(cmd)
	if err != nil {
		return err
	}
	defer db.Close()
	var reports []ingestReport
	failed, internal := 0, 0
	for _, f := range files {
		rep := ingestReport{File: f}
		res, p, err := ingestFile(cmd.Context(), db, f)
		if err != nil {
			failed++
			var ue *usageError
			if !errors.As(err, &ue) {
				internal++
			}
			rep.Error = err.Error()
			if format == "text" {
				fmt.Fprintf(e.stderr, "chainplan: ingest %v\n", err)
			}
			reports = append(reports, rep)
			continue
		}
		rep.RunID, rep.Existing, rep.Rows, rep.Model = res.RunID, res.Existing, res.Rows, p.Meta.ModelName
		for _, r := range p.Stages() {
			if r.Kind != "loss" {
				rep.Stages++
			}
		}
		if format == "text" {
			state := "new     "
			if res.Existing {
				state = "existing"
			}
			fmt.Fprintf(e.stdout, "run %-6d %s  %-20s %4d stages %7d rows  %s\n", res.RunID, state, rep.Model,
				rep.Stages, len(p.Rows), f)
		}
		reports = append(reports, rep)
	}
	if format == "json" {
		if err := writeJSON(e.stdout, reports); err != nil {
			return err
		}
	}
	if failed == 0 {
		return nil
	}
	// The messages are out already; the exit status says whether only bad files failed.
	if internal > 0 {
		return fmt.Errorf("%d of %d files not ingested", failed, len(files))
	}
	return usagef("%d of %d files not ingested", failed, len(files))
}
