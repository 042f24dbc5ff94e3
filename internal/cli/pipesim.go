package cli

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/plot"
	"github.com/chainplan/chainplan/internal/service"
	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner"
	"github.com/chainplan/chainplan/planner/pipesim"
)

type pipesimFlags struct {
	schedule, chain, run, stages, plan, planID string
	microbatches, minibatches, weightCopies    int
	maxInflight, plotMinibatches               int
	unitTime, flush                            bool
	bandwidth, alpha, memory, activationModel  string
	checkpoint, trace, plotFile, format        string
}

func newPipesimCmd(e *env) *cobra.Command {
	var f pipesimFlags
	cmd := &cobra.Command{
		Use:   "pipesim",
		Short: "Simulate a pipeline schedule: period, bubbles, memory, weight versions and staleness",
		Long: `Simulate K mini-batches of N micro-batches through a pipeline, event by event: every
device runs one task at a time; with --bandwidth every boundary has a link per direction
that carries one transfer at a time while the devices compute (a transfer lasts
--alpha + bytes/bandwidth). The chain's times are those of one micro-batch. Durations and
memory come from the pipeline model the validator uses (docs/pipeline.md), or with
--unit-time every task lasts one time point and transfers none (the papers' figures).

Schedules (docs/pipesim.md):
` + scheduleHelp() + `
Stages: --stages 4 cuts the chain into 4 stages of balanced load (contiguous's min-max
partition), --stages 1-4,5-9,10-12 gives the layer ranges (1-based, inclusive), stage k on
device k; --plan FILE or --plan-id N takes a chainplan.pipeline/v1 plan, which periodic
replays and the other schedules run on its partition (one stage per device), with the plan's
model (bandwidth, weight copies, activation model, memory).

A device holds --weight-copies copies of its stages' weights (2: weights and gradients; add
the optimizer's), one more per extra weight version the schedule keeps, its boundary
buffers and the activations of the micro-batches in flight.

With --run (or --plan-id) the simulation is recorded in the database (tables simulations and
simulation_stages, docs/sql.md), and where the pipeline runner stored executions of that
plan (or of a stored plan with the same partition) that ran the same schedule, each rank's
measured step, time per micro-batch and peak are printed beside the simulation of that step.`,
		Example: `  chainplan pipesim --chain examples/resnet50.json --stages 4 --schedule 1f1b-flush --microbatches 8 --bandwidth 12GB/s --format text
  chainplan pipesim --chain c.json --stages 4 --schedule timeprest --microbatches 2 --unit-time --trace trace.json --plot gantt.svg
  chainplan pipeline --chain c.json --gpus 4 --memory 8GB --bandwidth 12GB/s > plan.json
  chainplan pipesim --chain c.json --plan plan.json --schedule periodic --microbatches 16
  chainplan pipesim --plan-id 7 --schedule periodic --microbatches 8 --flush --format text   # against the runner's executions`,
		RunE: func(cmd *cobra.Command, _ []string) error { return runPipesim(cmd, e, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.schedule, "schedule", "", "schedule: "+orList(planner.Schedules()))
	fl.IntVar(&f.microbatches, "microbatches", 0, "N, micro-batches per mini-batch (optimizer step)")
	fl.IntVar(&f.minibatches, "minibatches", pipesim.DefaultMinibatches, "K, mini-batches to simulate")
	fl.StringVar(&f.chain, "chain", "", "chain file (chainplan.chain/v1 JSON)")
	fl.StringVar(&f.run, "run", "", "a stored run (its id, or latest) instead of --chain; records the simulation")
	fl.StringVar(&f.stages, "stages", "", "a stage count (4) or layer ranges (1-4,5-9,10-12)")
	fl.StringVar(&f.plan, "plan", "", "a pipeline plan file (chainplan.pipeline/v1) instead of --stages")
	fl.StringVar(&f.planID, "plan-id", "", "a stored pipeline plan instead of --stages (on its run's chain); records the simulation")
	fl.BoolVar(&f.unitTime, "unit-time", false, "every task lasts one time point, transfers none")
	fl.StringVar(&f.bandwidth, "bandwidth", "", "links of this many bytes per second, such as 12GB/s (default: free transfers, no links)")
	fl.StringVar(&f.alpha, "alpha", "", "latency of a transfer: seconds or a duration such as 10us (needs --bandwidth)")
	fl.IntVar(&f.weightCopies, "weight-copies", service.DefaultSimulationWeightCopies, "copies of the weights per device (2: weights and gradients)")
	fl.StringVar(&f.activationModel, "activation-model", string(pipeplan.ActivationsSaved), "stored activations: saved (stage input + saved_bytes) or input")
	fl.StringVar(&f.memory, "memory", "", "memory per device to check the peaks against, such as 16GiB")
	fl.StringVar(&f.checkpoint, "checkpoint", "", "stages (0-based, comma-separated, or all) that recompute their forward before their backward")
	fl.IntVar(&f.maxInflight, "max-inflight", 0, "timeprest: at most this many mini-batches in flight (0: no cap)")
	fl.BoolVar(&f.flush, "flush", false, "periodic: a flush after each mini-batch, as chainplan's pipeline runner does")
	fl.StringVar(&f.trace, "trace", "", "write a Chrome trace (chrome://tracing, Perfetto) to this JSON file")
	fl.StringVar(&f.plotFile, "plot", "", "draw the first mini-batches as a Gantt chart (.svg or .png)")
	fl.IntVar(&f.plotMinibatches, "plot-minibatches", plot.DefaultPeriods, "mini-batches the --plot picture shows")
	fl.StringVar(&f.format, "format", "json", "output format: json or text")
	return cmd
}

// scheduleHelp lists the simulated schedules of the registry, one line each.
func scheduleHelp() string {
	var b strings.Builder
	for _, e := range planner.Entries() {
		if e.Simulation != nil {
			fmt.Fprintf(&b, "  %-16s %s\n", e.Name, e.Summary)
		}
	}
	return b.String()
}

// checkPipesimFlags reads the flags into a request; every error names the flag.
func checkPipesimFlags(cmd *cobra.Command, f pipesimFlags) (service.PipesimRequest, error) {
	req := service.PipesimRequest{Schedule: f.schedule, Stages: f.stages, Microbatches: f.microbatches,
		Minibatches: f.minibatches, UnitTime: f.unitTime, MaxInflight: f.maxInflight, Flush: f.flush,
		ActivationModel: f.activationModel, Source: service.SourceCLI, Record: f.trace != "" || f.plotFile != ""}
	if err := checkFormat(f.format, "json", "text"); err != nil {
		return req, err
	}
	sources := 0
	for _, s := range []string{f.stages, f.plan, f.planID} {
		if s != "" {
			sources++
		}
	}
	switch {
	case f.schedule == "":
		return req, usagef("--schedule is required (%s)", orList(planner.Schedules()))
	case f.microbatches < 1:
		return req, usagef("--microbatches must be at least 1 (got %d)", f.microbatches)
	case f.minibatches < 1:
		return req, usagef("--minibatches must be at least 1 (got %d)", f.minibatches)
	case sources != 1:
		return req, usagef("give exactly one of --stages, --plan and --plan-id")
	case f.chain != "" && f.run != "":
		return req, usagef("--chain and --run are mutually exclusive")
	case f.planID == "" && f.chain == "" && f.run == "":
		return req, usagef("--chain or --run is required (or --plan-id: a stored plan on its run's chain)")
	case f.planID != "" && f.chain != "":
		return req, usagef("--plan-id simulates a stored plan on its run's chain: leave out --chain")
	case f.plotMinibatches < 1:
		return req, usagef("--plot-minibatches must be at least 1 (got %d)", f.plotMinibatches)
	}
	if err := service.CheckSchedule(f.schedule); err != nil {
		return req, &usageError{fmt.Errorf("--schedule: %w", err)}
	}
	if f.plotFile != "" {
		if _, err := plot.FormatOf(f.plotFile); err != nil {
			return req, err
		}
	}
	if f.planID != "" {
		id, err := parsePlanID(f.planID)
		if err != nil {
			return req, err
		}
		req.PlanID = id
	}
	if f.plan != "" || f.planID != "" {
		// The plan brings its model: only flags the user gave are refused by the service.
		req.ActivationModel = ""
		for _, name := range []string{"weight-copies", "activation-model"} {
			if cmd.Flags().Changed(name) {
				return req, usagef("--%s: a plan brings its own model; leave it out", name)
			}
		}
	} else {
		req.WeightCopies = f.weightCopies
	}
	if f.bandwidth != "" {
		bw, err := parseBandwidth(f.bandwidth)
		if err != nil {
			return req, err
		}
		req.Bandwidth = bw
	}
	if f.alpha != "" {
		a, err := parseSeconds(f.alpha)
		if err != nil {
			return req, usagef("--alpha %q: %v", f.alpha, err)
		}
		req.AlphaS = a
	}
	if f.memory != "" {
		m, err := chainplan.ParseBytes(f.memory)
		if err != nil || m <= 0 {
			return req, usagef("--memory %q: want a positive size such as 16GiB", f.memory)
		}
		req.MemoryBytes = m
	}
	if f.checkpoint == "all" {
		req.CheckpointAll = true
		return req, nil
	}
	ck, err := parseCheckpoint(f.checkpoint)
	if err != nil {
		return req, err
	}
	req.Checkpoint = ck
	return req, nil
}

// parseSeconds reads a duration: seconds ("1e-5") or with a unit ("10us").
func parseSeconds(s string) (float64, error) {
	if v, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return 0, fmt.Errorf("want a finite number of seconds ≥ 0")
		}
		return v, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("want seconds or a duration such as 10us")
	}
	return d.Seconds(), nil
}

// parseCheckpoint reads --checkpoint's stage indices.
func parseCheckpoint(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var out []int
	for _, part := range strings.Split(s, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil {
			return nil, usagef("--checkpoint: %q is not a stage index (0-based) or all", part)
		}
		out = append(out, k)
	}
	return out, nil
}

// pipesimOutput is pipesim's JSON: the simulation's document, and for a stored run where
// it was recorded and what the runner measured.
type pipesimOutput struct {
	*pipesim.Result
	RunID        int64                    `json:"run_id,omitempty"`
	SimulationID int64                    `json:"simulation_id,omitempty"`
	Comparisons  []service.RankComparison `json:"comparisons,omitempty"`
}

func runPipesim(cmd *cobra.Command, e *env, f pipesimFlags) error {
	req, err := checkPipesimFlags(cmd, f)
	if err != nil {
		return err
	}
	out, c, err := pipesimInput(cmd, e, f, req)
	if err != nil {
		return err
	}
	if f.trace != "" {
		b, err := pipesim.ChromeTrace(out.Result)
		if err != nil {
			return err
		}
		if err := os.WriteFile(f.trace, b, 0o644); err != nil {
			return &usageError{fmt.Errorf("--trace: %w", err)}
		}
		fmt.Fprintf(e.stderr, "wrote %s\n", f.trace)
	}
	if f.plotFile != "" {
		d, err := plot.SimulationOf(out.Result, f.plotMinibatches)
		if err != nil {
			return err
		}
		fig, err := plot.Pipeline(d)
		if err != nil {
			return err
		}
		if err := fig.Save(f.plotFile); err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "wrote %s\n", f.plotFile)
	}
	if f.format == "json" {
		return writeJSON(e.stdout, out)
	}
	writePipesimText(e.stdout, c, out)
	return nil
}

// pipesimInput simulates what was given, read through the source envelope as every
// family's input is (service.Resolve, then service.SimulateInput): a --chain file (nothing
// recorded), or a stored run, whose simulation the service records and compares with the
// runner's executions; --plan-id alone is the stored plan on its run's chain (recorded).
func pipesimInput(cmd *cobra.Command, e *env, f pipesimFlags, req service.PipesimRequest) (*pipesimOutput, *chainplan.Chain, error) {
	if f.plan != "" {
		var err error
		if req.Plan, err = pipeplan.ReadPlan(f.plan); err != nil {
			return nil, nil, err
		}
	}
	var got *service.SimulatedRun
	var svc *service.Service
	if f.run == "" && f.chain == "" { // --plan-id alone: the source is the database only
		var err error
		if svc, err = openStore(cmd); err != nil {
			return nil, nil, err
		}
		defer svc.Close()
		if got, err = svc.SimulateRun(cmd.Context(), service.RunRef{}, req); err != nil {
			return nil, nil, err
		}
	} else {
		s, in, err := resolveSource(cmd, f.run, service.Source{ChainPath: f.chain})
		if err != nil {
			return nil, nil, err
		}
		if svc = s; svc != nil {
			defer svc.Close()
		}
		res, stored, err := service.SimulateInput(cmd.Context(), in, req)
		if err != nil {
			return nil, nil, err
		}
		if stored == nil {
			c, err := in.ChainOf(cmd.Context())
			return &pipesimOutput{Result: res}, c, err
		}
		got = stored
	}
	fmt.Fprintf(e.stderr, "chainplan: recorded as simulation %d of run %d in %s\n", got.SimulationID, got.RunID, svc.Path())
	return &pipesimOutput{Result: got.Result, RunID: got.RunID, SimulationID: got.SimulationID, Comparisons: got.Comparisons}, got.Chain, nil
}
