package cli

import (
	"github.com/spf13/cobra"

	"github.com/chainplan/chainplan/store"
)

func newProfilesCmd(e *env) *cobra.Command {
	var (
		model  string
		limit  int
		format string
	)
	cmd := &cobra.Command{
		Use:   "profiles",
		Short: "List the stored profiles (runs), newest first",
		Long: `List the runs of the profile database, newest first (by the time each profile was
taken): run id, when, model, stage count, torch version, device, dtype, batch size, the
total forward plus backward time of one step in milliseconds, and the host.`,
		Example: `  chainplan profiles
  chainplan profiles --model resnet50 --limit 5
  chainplan profiles --format csv > runs.csv`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(format, "table", "csv", "json"); err != nil {
				return err
			}
			if limit < 0 {
				return usagef("--limit must be ≥ 0 (got %d)", limit)
			}
			db, err := openStore(cmd)
			if err != nil {
				return err
			}
			defer db.Close()
			runs, err := db.Runs(cmd.Context(), store.RunFilter{ModelName: model, Limit: limit})
			if err != nil {
				return err
			}
			return writeRuns(newResultWriter(e.stdout, format), runs)
		},
	}
	cmd.Flags().StringVar(&model, "model", "", "only runs of this model")
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many runs (0: all)")
	cmd.Flags().StringVar(&format, "format", "table", "output format: table, csv or json")
	return cmd
}

// writeRuns writes one line per run.
func writeRuns(rw resultWriter, runs []*store.Run) error {
	cols := []string{"run_id", "created_at", "model_name", "stages", "torch_version", "device", "device_name",
		"dtype", "batch_size", "step_ms", "host"}
	if err := rw.begin(cols); err != nil {
		return err
	}
	for _, r := range runs {
		step := (r.TotalFwdTimeS + r.TotalBwdTimeS) * 1e3
		err := rw.row([]any{r.ID, r.CreatedAt.UTC().Format("2006-01-02 15:04:05"), r.ModelName, int64(r.NumStages),
			r.TorchVersion, r.Device, r.DeviceName, r.DType, r.BatchSize, roundTo(step, 3), r.Host})
		if err != nil {
			return err
		}
	}
	return rw.end()
}
