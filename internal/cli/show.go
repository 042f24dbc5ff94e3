package cli

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chainplan/chainplan/internal/service"
	"github.com/chainplan/chainplan/profile"
	"github.com/chainplan/chainplan/store"
)

func newShowCmd(e *env) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "show RUN",
		Short: "Show a stored profile: its provenance and its stages as a table",
		Long: `Show run RUN (a run id from chainplan profiles, or "latest"): its provenance, then one
line per stage with the medians over the repetitions: times in milliseconds, sizes in
bytes (NULL when the profile did not measure them). The loss is the last line.`,
		Example: `  chainplan show 12
  chainplan show latest --format csv`,
		Args: oneRunArg("show"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format, "table", "csv", "json"); err != nil {
				return err
			}
			return withRun(cmd, args[0], func(ctx context.Context, svc *service.Service, id int64) error {
				run, err := svc.Store().Run(ctx, id)
				if err != nil {
					return err
				}
				stages, err := svc.Store().Stages(ctx, id)
				if err != nil {
					return err
				}
				if format == "table" {
					writeRunHeader(e, run)
				}
				return writeStages(newResultWriter(e.stdout, format), stages)
			})
		},
	}
	cmd.Flags().StringVar(&format, "format", "table", "output format: table (with the provenance), csv or json")
	return cmd
}

// oneRunArg accepts exactly one RUN argument.
func oneRunArg(name string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != 1 {
			return usagef("%s takes one RUN (a run id from chainplan profiles, or \"latest\"), got %d arguments", name, len(args))
		}
		return nil
	}
}

// writeRunHeader prints a run's provenance above its stages.
func writeRunHeader(e *env, r *store.Run) {
	shape := make([]string, len(r.InputShape))
	for i, d := range r.InputShape {
		shape[i] = fmt.Sprint(d)
	}
	fmt.Fprintf(e.stdout, "run %d: %s, %d stages", r.ID, r.ModelName, r.NumStages)
	if r.HasLoss {
		fmt.Fprint(e.stdout, " + loss")
	}
	fmt.Fprintf(e.stdout, ", taken %s on %s\n", r.CreatedAt.UTC().Format("2006-01-02 15:04:05 UTC"), r.Host)
	fmt.Fprintf(e.stdout, "  torch %s, %s (%s), %s, batch %d, input [%s] (%s), %d threads\n", r.TorchVersion,
		r.Device, r.DeviceName, r.DType, r.BatchSize, strings.Join(shape, ", "), bytesLabel(r.InputBytes), r.Threads)
	fmt.Fprintf(e.stdout, "  %s timing, %d warm-up + %d repetitions; file %s (sha256 %.12s)\n\n", r.TimingMethod,
		r.WarmupReps, r.Reps, r.SourcePath, r.SHA256)
}

// writeStages writes one line per stage.
func writeStages(rw resultWriter, stages []profile.StageSummary) error {
	cols := []string{"stage", "name", "kind", "reps", "fwd_ms", "bwd_ms", "in_bytes", "out_bytes", "saved_bytes",
		"fwd_tmp_bytes", "bwd_tmp_bytes", "param_bytes"}
	if err := rw.begin(cols); err != nil {
		return err
	}
	null := func(v profile.NullInt64) any {
		if !v.Valid {
			return nil
		}
		return v.Int64
	}
	for _, s := range stages {
		err := rw.row([]any{int64(s.Index), s.Name, s.Kind, int64(s.Reps), roundTo(s.FwdTimeS*1e3, 4),
			roundTo(s.BwdTimeS*1e3, 4), s.InBytes, s.OutBytes, null(s.SavedBytes), null(s.FwdTmpBytes),
			null(s.BwdTmpBytes), s.ParamBytes})
		if err != nil {
			return err
		}
	}
	return rw.end()
}

// roundTo rounds v to n decimals, for display.
func roundTo(v float64, n int) float64 {
	p := math.Pow(10, float64(n))
	return math.Round(v*p) / p
}
