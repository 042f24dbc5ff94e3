package cli

import (
	"fmt"
	"os"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/service"
	"github.com/chainplan/chainplan/planner/cluster"
)

func newAdviceCmd(e *env) *cobra.Command {
	return groupCmd("advice", "Record measured runs of advised candidates and compare them with the predictions",
		`Stored advice (chainplan advise --run, chainplan search3d --run, chainplan.advise and
chainplan.search3d on a stored profile) keeps every candidate's prediction. Record what a
candidate measured when you ran it, then compare (docs/parallel.md, "Accuracy"): ParaDL's
accuracy 1 − |predicted − measured| / measured per candidate, Spearman's ρ between the
predicted and measured times, and the predicted rank of the measured best (AMP's ranking
quality). The advice_accuracy view holds the same for SQL. calibrate fits search3d's
cost model to the measured runs of a cluster; search3d --calibration applies it.`,
		newAdviceRecordCmd(e), newAdviceAccuracyCmd(e), newAdviceCalibrateCmd(e))
}

func parseAdviceID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id < 1 {
		return 0, usagef("ADVICE must be an advice id (a positive integer), got %q", s)
	}
	return id, nil
}

func newAdviceRecordCmd(e *env) *cobra.Command {
	var m service.AdviceMeasurement
	var timeS, peak string
	var rankPeaks []string
	cmd := &cobra.Command{
		Use:   "record ADVICE --candidate N --iteration-time SECONDS [--iterations N] [--peak BYTES | --rank-peaks B,B,...] [--oom]",
		Short: "Record a measured run of an advised candidate",
		Example: `  chainplan advice record 3 --candidate 0 --iteration-time 0.412 --iterations 99 --peak 13.2GB
  chainplan advice record 3 --candidate 4 --oom --iteration-time 1
  chainplan advice record 3 --candidate 1 --iteration-time 0.9 --rank-peaks 3.1GB,3.4GB,2.9GB,3.0GB`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("%s takes one ADVICE id", cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseAdviceID(args[0])
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("candidate") {
				return usagef("--candidate is required: the candidate's position in the advice (its list index from 0)")
			}
			if m.IterationTimeS, err = strconv.ParseFloat(timeS, 64); err != nil || !(m.IterationTimeS > 0) {
				return usagef("--iteration-time must be a positive number of seconds (got %q)", timeS)
			}
			if peak != "" {
				if m.PeakBytes, err = chainplan.ParseBytes(peak); err != nil {
					return &usageError{fmt.Errorf("--peak: %w", err)}
				}
			}
			for r, p := range rankPeaks {
				b, err := chainplan.ParseBytes(p)
				if err != nil {
					return &usageError{fmt.Errorf("--rank-peaks, rank %d: %w", r, err)}
				}
				m.PeakBytesPerRank = append(m.PeakBytesPerRank, b)
			}
			if m.Host == "" {
				m.Host, _ = os.Hostname()
			}
			svc, err := openStore(cmd)
			if err != nil {
				return err
			}
			defer svc.Close()
			mid, err := svc.RecordAdviceMeasurement(cmd.Context(), id, m)
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "recorded measurement %d of candidate %d of advice %d\n", mid, m.Candidate, id)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&m.Candidate, "candidate", 0, "the candidate's position in the advice's list, from 0 (−1: search3d's Megatron pick)")
	fl.StringVar(&timeS, "iteration-time", "", "measured time of one iteration, seconds (mean over iterations 2..n)")
	fl.IntVar(&m.Iterations, "iterations", 1, "iterations the time is the mean of")
	fl.StringVar(&peak, "peak", "", "measured peak memory of a device (bytes or a size such as 13.2GB)")
	fl.StringSliceVar(&rankPeaks, "rank-peaks", nil, "measured peak memory of every rank, in rank order (comma-separated sizes); the largest is the run's peak")
	fl.BoolVar(&m.OutOfMemory, "oom", false, "the run ran out of memory")
	fl.StringVar(&m.Host, "host", "", "where it ran (default: this host)")
	return cmd
}

func newAdviceAccuracyCmd(e *env) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "accuracy ADVICE",
		Short: "Compare an advice's predictions with its recorded runs",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("%s takes one ADVICE id", cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format, "json", "text"); err != nil {
				return err
			}
			id, err := parseAdviceID(args[0])
			if err != nil {
				return err
			}
			svc, err := openStore(cmd)
			if err != nil {
				return err
			}
			defer svc.Close()
			rep, err := svc.Accuracy(cmd.Context(), id)
			if err != nil {
				return err
			}
			if format == "json" {
				return writeJSON(e.stdout, rep)
			}
			fmt.Fprintf(e.stdout, "advice %d (%s): %s on %s, %d measured candidates\n", rep.AdviceID, rep.Kind, rep.Model,
				rep.Cluster, len(rep.Candidates))
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(tw, "candidate\trank\tstrategy\tdevices\tpredicted\tmeasured\taccuracy\truns\tout of memory\t")
			for _, c := range rep.Candidates {
				acc := "—"
				if c.Accuracy != nil {
					acc = fmt.Sprintf("%.1f%%", 100**c.Accuracy)
				}
				fmt.Fprintf(tw, "%d\t%d\t%s\t%d\t%s\t%s\t%s\t%d\t%d\t\n", c.Candidate, c.Rank, c.Strategy, c.Devices,
					secondsText(c.PredictedS), secondsText(c.MeasuredS), acc, c.Runs, c.OOMRuns)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			rho := "— (fewer than two measured)"
			if rep.Spearman != nil {
				rho = fmt.Sprintf("%.3f", *rep.Spearman)
			}
			fmt.Fprintf(e.stdout, "mean accuracy %.1f%%, Spearman ρ %s, measured best ranked %d, %d ran out of memory\n",
				100*rep.MeanAccuracy, rho, rep.MeasuredBestRank, rep.OutOfMemory)
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: json or text")
	return cmd
}

func newAdviceCalibrateCmd(e *env) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "calibrate ADVICE... [-o FILE]",
		Short: "Fit search3d's cost model to the measured runs of stored advice on one cluster",
		Long: `Fit a calibration (docs/distributed.md, "The advisors' pick, launched and calibrated") to the
candidates measured against stored search3d advice on one cluster: a scale of the predicted
computation, a scale of the predicted communication and an overhead per iteration, by
non-negative least squares on the relative error (one scale for both, or one each, whichever
predicts each measured candidate better from the others). Writes chainplan.calibration/v1
JSON; search3d --calibration FILE applies it to later predictions on that cluster. Exit
status 2: an unknown advice, advice of advise or of several clusters, fewer than 2 measured
candidates.`,
		Example: `  chainplan advice calibrate 3 4 -o cluster-a.calibration.json
  chainplan search3d --run latest --cluster cluster-a.yaml --global-batch 64 --calibration cluster-a.calibration.json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("%s takes one or more ADVICE ids", cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ids := make([]int64, len(args))
			for i, a := range args {
				id, err := parseAdviceID(a)
				if err != nil {
					return err
				}
				ids[i] = id
			}
			svc, err := openStore(cmd)
			if err != nil {
				return err
			}
			defer svc.Close()
			c, err := svc.Calibrate(cmd.Context(), ids)
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stderr, "calibrated on %d measured candidates of %s: computation ×%.3g, communication ×%.3g, "+
				"%.3g s per iteration (%s scales; leave-one-out accuracy %.1f%%)\n", c.Pairs, c.Cluster, c.ComputeScale,
				c.CommScale, c.OverheadS, c.Model, 100*c.LeaveOneOutAccuracy)
			if output == "" {
				return writeJSON(e.stdout, c)
			}
			f, err := os.Create(output)
			if err != nil {
				return err
			}
			if err := writeJSON(f, c); err != nil {
				f.Close()
				return err
			}
			return f.Close()
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "write the calibration to this file instead of standard output")
	return cmd
}

func newClusterCmd(e *env) *cobra.Command {
	var format string
	check := &cobra.Command{
		Use:   "check FILE",
		Short: "Check a cluster file (YAML or JSON) and print it in canonical form or as a summary",
		Long: `Read a cluster description (docs/parallel.md, "Cluster files"), check every field, and
print its canonical form (chainplan.cluster/v1 JSON: nodes expanded, bandwidths in bytes per
second; what the store keeps) or a summary. A refused file exits with status 2 and names
the field and its line.`,
		Example: `  chainplan cluster check examples/clusters/amp-het-cluster.yaml --format text`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("%s takes one FILE", cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format, "json", "text"); err != nil {
				return err
			}
			c, err := cluster.ReadFile(args[0])
			if err != nil {
				return err
			}
			if format == "json" {
				_, err := fmt.Fprintf(e.stdout, "%s\n", c.Canonical())
				return err
			}
			fmt.Fprintf(e.stdout, "%s: %d nodes, %d devices (%v), contention %s\n", c.Name, len(c.Nodes), c.NumDevices(),
				c.DeviceTypes(), c.Contention.Mode)
			for _, n := range c.Nodes {
				fmt.Fprintf(e.stdout, "  %s: %d × %s of %s, intra %s/s, network %s/s × %d\n", n.Name, n.Devices, n.DeviceType,
					chainplan.FormatBytes(n.MemoryBytes), bandwidthText(n.IntraBandwidth), bandwidthText(n.InterBandwidth), n.NICs)
			}
			return nil
		},
	}
	check.Flags().StringVar(&format, "format", "json", "output format: json (canonical) or text")
	return groupCmd("cluster", "Check a cluster description", "", check)
}

// bandwidthText writes bytes per second in GB ("12.5 GB").
func bandwidthText(bps float64) string {
	if bps == 0 {
		return "—"
	}
	return fmt.Sprintf("%.4g GB", bps/1e9)
}
