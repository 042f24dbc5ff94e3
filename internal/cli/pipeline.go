package cli

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/service"
	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner"
	"github.com/chainplan/chainplan/planner/milp"
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
	headroom        float64
	checkpoint      bool
	noTemporaries   bool
	replan          bool
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
A device keeps --weight-copies copies of its weights (2, the default: weights and
gradients, what chainplan's synchronous executor holds; add one per optimizer buffer: 3
for SGD with momentum, 4 for Adam; 3 without an optimizer is PipeDream-2BW's stashing), a
buffer for each boundary it borders, the activations of the mini-batches in flight
(counted as the stage input plus the measured saved bytes, --activation-model saved, the
default, or as each layer's input, input, the paper's), and while an operation runs its
temporaries, the gradients it handles and on the last device the loss
(--no-temporaries leaves these out, as the paper does). --headroom 0.1 keeps a tenth of
each device free for what no profile measures. --checkpoint lets a stage keep only its
input and recompute its activations with rotor when memory is short (docs/pipeline.md).

--memory min plans at the smallest memory per device for which the algorithm finds a
plan; --memory faster at the smallest one where the plan is faster than one device
running the chain (the fastest plan, with a note, when none is). The text output gives
the plan's speed-up over one device and against the best plan without a memory limit.
Exit status 3 means no plan fits: the message gives the smallest memory that does,
or a lower bound every plan needs.

With --run the plan is recorded; the same request on the same profile gives back the
plan recorded before (--replan plans again).

madpipe schedules with the HiGHS MILP solver that comes with the Python package
(highsbox; CHAINPLAN_HIGHS overrides it). Without one it falls back to the best
contiguous plan: a warning on standard error and "fallback": "no-milp-solver" in the
plan; --require-solver makes a missing solver an error (exit 2) instead.`,
		Example: `  chainplan pipeline --chain resnet50.json --gpus 4 --memory 8GB --bandwidth 12GB/s
  chainplan pipeline --algo contiguous --chain c.json --gpus 8 --memory min --bandwidth 24GB/s --format text
  chainplan pipeline --run latest --gpus 2 --memory 16GiB --bandwidth 12GB/s   # records the plan
  chainplan pipeline --run latest --gpus 4 --memory faster --bandwidth 12GB/s --checkpoint --format text`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runPipeline(cmd, e, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.algo, "algo", planner.DefaultPipelineAlgo, "algorithm: "+orList(algoNames(isPipeline)))
	fl.StringVar(&f.chain, "chain", "", "chain file (chainplan.chain/v1 JSON)")
	fl.StringVar(&f.run, "run", "", "plan a stored profile instead of --chain (a run id or \"latest\"); records the plan")
	fl.IntVar(&f.gpus, "gpus", 0, "number of devices P (at least 1)")
	fl.StringVar(&f.memory, "memory", "", "memory per device: bytes, a size such as 16GiB, 'min' or 'faster'")
	fl.StringVar(&f.bandwidth, "bandwidth", "", "bandwidth of each device pair's link: bytes per second, or with a unit such as 12GB/s")
	fl.IntVar(&f.weightCopies, "weight-copies", pipeplan.DefaultWeightCopies, "copies of the weights a device keeps (2: weights and gradients; +1 per optimizer buffer; 3 for weight stashing)")
	fl.StringVar(&f.activationModel, "activation-model", string(pipeplan.ActivationsSaved), "stored activations: input (each layer's input, the paper's) or saved (stage input + saved_bytes)")
	fl.Float64Var(&f.headroom, "headroom", 0, "share of each device's memory the plan leaves free, in [0, 1)")
	fl.BoolVar(&f.checkpoint, "checkpoint", false, "let stages recompute their activations (rotor at the device's activation budget)")
	fl.BoolVar(&f.noTemporaries, "no-temporaries", false, "leave the operations' temporaries and the loss out of the memory (the paper's model)")
	fl.BoolVar(&f.replan, "replan", false, "with --run: plan again even if the same request was planned on that profile")
	fl.StringVar(&f.format, "format", "json", "output format: json or text")
	fl.DurationVar(&f.timeLimit, "time-limit", milp.DefaultTimeLimit, "time limit of madpipe's scheduling MILP")
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
func checkPipelineFlags(f pipelineFlags) (pipeplan.Request, error) {
	req := pipeplan.Request{Algo: f.algo, TimeLimit: f.timeLimit, Source: service.SourceCLI, Replan: f.replan, RequireSolver: f.requireSolver}
	if err := checkFormat(f.format, "json", "text"); err != nil {
		return req, err
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
	case math.IsNaN(f.headroom) || f.headroom < 0 || f.headroom >= 1:
		return req, usagef("--headroom must be a share of the memory in [0, 1), such as 0.1 (got %v)", f.headroom)
	case f.replan && f.run == "":
		return req, usagef("--replan applies to --run (a plan of a --chain file is never recorded)")
	}
	am := pipeplan.ActivationModel(f.activationModel)
	if am != pipeplan.ActivationsInput && am != pipeplan.ActivationsSaved {
		return req, usagef("--activation-model must be %q or %q (got %q)", pipeplan.ActivationsInput, pipeplan.ActivationsSaved, f.activationModel)
	}
	bw, err := parseBandwidth(f.bandwidth)
	if err != nil {
		return req, err
	}
	req.Options = pipeplan.Options{GPUs: f.gpus, Bandwidth: bw, WeightCopies: f.weightCopies, ActivationModel: am,
		Headroom: f.headroom, Checkpoint: f.checkpoint, NoTemporaries: f.noTemporaries}
	switch f.memory {
	case "min":
		req.MinMemory = true
		return req, nil
	case "faster":
		req.FasterMemory = true
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
func pipelineInput(cmd *cobra.Command, e *env, f pipelineFlags, req pipeplan.Request) (*chainplan.Chain, *pipeplan.Plan, error) {
	svc, in, err := resolveSource(cmd, f.run, service.Source{ChainPath: f.chain})
	if err != nil {
		return nil, nil, err
	}
	if svc != nil {
		defer svc.Close()
	}
	got, _, err := service.PlanPipelineInput(cmd.Context(), in, req)
	if got == nil {
		return nil, nil, err
	}
	writeNotes(e, got.Notes)
	warnFallback(e, got.Plan)
	if err != nil {
		return nil, nil, err
	}
	if got.PlanID != 0 && !got.Reused {
		reportRecorded(e, svc, got.RunID, got.PlanID)
	}
	return got.Chain, got.Plan, nil
}

// warnFallback says on standard error, after the planner's notes, that the plan is not the
// one asked for when the planner fell back (a missing MILP solver), and how to refuse that.
func warnFallback(e *env, p *pipeplan.Plan) {
	if p == nil || p.Fallback == "" {
		return
	}
	what := p.Fallback
	if p.Fallback == pipeplan.FallbackNoSolver {
		what = "no MILP solver was found"
	}
	fmt.Fprintf(e.stderr, "chainplan: warning: %s: the plan is %s's fallback, the best contiguous plan (period %s), not its own schedule (\"fallback\": %q in the plan; --require-solver makes this an error)\n",
		what, p.Algo, secondsText(p.Period), p.Fallback)
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
