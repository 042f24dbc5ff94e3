package cli

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/service"
	"github.com/chainplan/chainplan/planner"
	"github.com/chainplan/chainplan/planner/pipeline"
)

type pipelineFlags struct {
	algo            string
	chain           string
	run             string
	gpus            int
	memory          string
	bandwidth       string
	weightCopies    int
	activationModel string
	format          string
	timeLimit       time.Duration
	requireSolver   bool
}

func newPipelineCmd(e *env) *cobra.Command {
	var f pipelineFlags
	cmd := &cobra.Command{
		Use:   "pipeline",
		Short: "Partition a chain over P devices and schedule it as a pipeline",
		Long: `Partition a chain over P identical devices of --memory bytes each, linked pairwise at
--bandwidth bytes per second, and compute a 1-periodic pipelined schedule of smallest
period; print it as a chainplan.pipeline/v1 plan (JSON) or as text.

Algorithms (docs/pipeline.md):
` + pipelineAlgoHelp() + `
A device keeps --weight-copies copies of its weights (3: PipeDream-2BW stashing; 2: a
synchronous flush), a buffer for each boundary it borders, and the activations of the
mini-batches in flight, counted as each layer's input (--activation-model input, the
paper's) or as the stage input plus the measured saved bytes (saved, the default).

--memory min plans at the smallest memory per device for which the algorithm finds a
plan. Exit status 3 means no plan fits: the message gives the smallest memory that does,
or a lower bound every plan needs.

madpipe schedules with the HiGHS MILP solver that comes with the Python package
(highsbox; CHAINPLAN_HIGHS overrides it). Without one it falls back to the best
contiguous plan: a warning on standard error and "fallback": "no-milp-solver" in the
plan; --require-solver makes a missing solver an error (exit 2) instead.`,
		Example: `  chainplan pipeline --chain resnet50.json --gpus 4 --memory 8GB --bandwidth 12GB/s
  chainplan pipeline --algo contiguous --chain c.json --gpus 8 --memory min --bandwidth 24GB/s --format text
  chainplan pipeline --run latest --gpus 2 --memory 16GiB --bandwidth 12GB/s   # records the plan`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runPipeline(cmd, e, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.algo, "algo", "madpipe", "algorithm: "+orList(algoNames(isPipeline)))
	fl.StringVar(&f.chain, "chain", "", "chain file (chainplan.chain/v1 JSON)")
	fl.StringVar(&f.run, "run", "", "plan a stored profile instead of --chain (a run id or \"latest\"); records the plan")
	fl.IntVar(&f.gpus, "gpus", 0, "number of devices P (at least 1)")
	fl.StringVar(&f.memory, "memory", "", "memory per device: bytes, a size such as 16GiB, or 'min'")
	fl.StringVar(&f.bandwidth, "bandwidth", "", "bandwidth of each device pair's link: bytes per second, or with a unit such as 12GB/s")
	fl.IntVar(&f.weightCopies, "weight-copies", pipeline.DefaultWeightCopies, "copies of the weights a device keeps (3: weight stashing, 2: synchronous flush)")
	fl.StringVar(&f.activationModel, "activation-model", string(pipeline.ActivationsSaved), "stored activations: input (each layer's input, the paper's) or saved (stage input + saved_bytes)")
	fl.StringVar(&f.format, "format", "json", "output format: json or text")
	fl.DurationVar(&f.timeLimit, "time-limit", 10*time.Second, "time limit of madpipe's scheduling MILP")
	fl.BoolVar(&f.requireSolver, "require-solver", false, "fail (exit 2) when madpipe's MILP solver is missing instead of falling back to the best contiguous plan")
	return cmd
}

// isPipeline reports whether the algorithm's plans are pipeline plans (chainplan pipeline).
func isPipeline(e planner.Entry) bool { return e.Pipeline != nil }

// pipelineAlgoHelp lists the pipeline algorithms of the registry, one line each.
func pipelineAlgoHelp() string {
	var b strings.Builder
	for _, e := range planner.Entries() {
		if isPipeline(e) {
			fmt.Fprintf(&b, "  %-12s %s\n", e.Name, e.Summary)
		}
	}
	return b.String()
}

// checkPipelineFlags reads the flags into a request; every error names the flag.
func checkPipelineFlags(f pipelineFlags) (service.PipelineRequest, error) {
	req := service.PipelineRequest{Algo: f.algo, TimeLimit: f.timeLimit, Source: service.SourceCLI, RequireSolver: f.requireSolver}
	if err := checkFormat(f.format, "json", "text"); err != nil {
		return req, err
	}
	if err := service.CheckPipelineAlgo(f.algo); err != nil {
		return req, &usageError{fmt.Errorf("--algo: %w", err)}
	}
	switch {
	case f.chain == "" && f.run == "":
		return req, usagef("--chain is required (or --run RUN to plan a stored profile)")
	case f.chain != "" && f.run != "":
		return req, usagef("--chain and --run are mutually exclusive")
	case f.gpus < 1:
		return req, usagef("--gpus must be at least 1 (got %d)", f.gpus)
	case f.memory == "":
		return req, usagef("--memory is required (bytes per device, a size such as 16GiB, or 'min')")
	case f.bandwidth == "":
		return req, usagef("--bandwidth is required (bytes per second, e.g. 12GB/s)")
	case f.weightCopies < 1:
		return req, usagef("--weight-copies must be at least 1 (got %d; 3 for weight stashing, 2 for a synchronous flush)", f.weightCopies)
	case f.timeLimit <= 0:
		return req, usagef("--time-limit must be positive (got %v)", f.timeLimit)
	}
	am := pipeline.ActivationModel(f.activationModel)
	if am != pipeline.ActivationsInput && am != pipeline.ActivationsSaved {
		return req, usagef("--activation-model must be %q or %q (got %q)", pipeline.ActivationsInput, pipeline.ActivationsSaved, f.activationModel)
	}
	bw, err := parseBandwidth(f.bandwidth)
	if err != nil {
		return req, err
	}
	req.Options = pipeline.Options{GPUs: f.gpus, Bandwidth: bw, WeightCopies: f.weightCopies, ActivationModel: am}
	if f.memory == "min" {
		req.MinMemory = true
		return req, nil
	}
	m, err := chainplan.ParseBytes(f.memory)
	if err != nil {
		return req, &usageError{fmt.Errorf("--memory: %w", err)}
	}
	if m <= 0 {
		return req, usagef("--memory must be positive (got %q)", f.memory)
	}
	req.Options.MemoryBytes = m
	return req, nil
}

func runPipeline(cmd *cobra.Command, e *env, f pipelineFlags) error {
	req, err := checkPipelineFlags(f)
	if err != nil {
		return err
	}
	c, p, err := pipelineInput(cmd, e, f, req)
	if err != nil {
		return err
	}
	if f.format == "json" {
		b, err := p.MarshalIndent()
		if err != nil {
			return err
		}
		_, err = e.stdout.Write(b)
		return err
	}
	return writePipelineText(e.stdout, c, p)
}

// pipelineInput plans what pipeline was given: the --chain file, or with --run a stored
// run, whose plan it records with the service's parameters and reports on standard error
// (standard output carries the plan alone). It returns the chain planned and the plan.
func pipelineInput(cmd *cobra.Command, e *env, f pipelineFlags, req service.PipelineRequest) (*chainplan.Chain, *pipeline.Plan, error) {
	if f.run == "" {
		c, err := chainplan.ReadChain(f.chain)
		if err != nil {
			return nil, nil, err
		}
		p, notes, err := service.SolvePipeline(c, req)
		writeNotes(e, notes)
		warnFallback(e, p)
		return c, p, err
	}
	svc, ref, err := openRunStore(cmd, f.run)
	if err != nil {
		return nil, nil, err
	}
	defer svc.Close()
	got, err := svc.PlanPipelineRun(cmd.Context(), ref, req)
	if err != nil {
		return nil, nil, err
	}
	writeNotes(e, got.Notes)
	warnFallback(e, got.Plan)
	reportRecorded(e, svc, got.RunID, got.PlanID)
	return got.Chain, got.Plan, nil
}

// warnFallback says on standard error, after the planner's notes, that the plan is not the
// one asked for when the planner fell back (a missing MILP solver), and how to refuse that.
func warnFallback(e *env, p *pipeline.Plan) {
	if p == nil || p.Fallback == "" {
		return
	}
	what := p.Fallback
	if p.Fallback == pipeline.FallbackNoSolver {
		what = "no MILP solver was found"
	}
	fmt.Fprintf(e.stderr, "chainplan: warning: %s: the plan is %s's fallback, the best contiguous plan (period %.6g), not its own schedule (\"fallback\": %q in the plan; --require-solver makes this an error)\n",
		what, p.Algo, p.Period, p.Fallback)
}

// writeNotes prints a planner's notes on standard error.
func writeNotes(e *env, notes []string) {
	for _, n := range notes {
		fmt.Fprintf(e.stderr, "chainplan: %s\n", n)
	}
}

// speedup is U(1,L)/T, the paper's speedup over one device (spec §1.4).
func speedup(c *chainplan.Chain, period float64) float64 {
	if period <= 0 {
		return math.Inf(1)
	}
	return c.SumTime() / period
}
