package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/service"
	"github.com/chainplan/chainplan/planner"
)

type solveFlags struct {
	algo     string
	budget   string
	slots    int64
	segments int
	format   string
	run      string
	// bandwidth is --bandwidth, the link of the offloading algorithms (offload.go).
	bandwidth string
	// towers are the --chain files (one, or one per tower for the multichain
	// algorithms), --loss and --keep-input-grad (towers.go): the source service.Resolve
	// reads.
	towers towerFlags
}

func newSolveCmd(e *env) *cobra.Command {
	var f solveFlags
	cmd := &cobra.Command{
		Use:   "solve",
		Short: "Compute a checkpointing schedule for a chain under a memory budget",
		Long: `Compute a schedule for a chain within a memory budget (total activation memory,
the chain input included) and print it as JSON or text.

` + algoHelp() + `
The offloading algorithms are described in docs/pofo.md. The multichain algorithms plan
K towers joined at the loss (docs/multichain.md): give one --chain per tower (each without
a loss of its own) and the joint loss with --loss, or one chainplan.multichain/v1 bundle;
the budget counts every tower input.
Without --algo, the input chooses, as Python's chainplan.plan does: towers (several
--chain, a --loss, a bundle, a stored run of towers) are planned with ` + planner.DefaultMultichainAlgo + `,
a chain whose stages have operation-level options with rotor-ops, any other chain with
rotor; the plan says which ("algo").
--budget min solves at the algorithm's smallest feasible budget.
Exit status 3 means the budget is too small; the message gives the smallest one.`,
		Example: `  chainplan solve --chain examples/resnet50.json --budget 3GiB
  chainplan solve --algo sequential --segments 4 --chain c.json --budget 800MB --format text
  chainplan solve --chain c.json --budget min --slots 1000
  chainplan solve --algo pofo --chain c.json --budget 3GiB --bandwidth 12GB/s
  chainplan solve --run latest --budget 2GiB     # plan a stored profile, record the plan
  chainplan solve --algo multichain --chain image.json --chain text.json --loss loss.json --budget 2GiB`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSolve(cmd, e, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.algo, "algo", "", "algorithm: "+orList(algoNames(solvable))+
		" (default: the input's, as Python's chainplan.plan: "+planner.DefaultMultichainAlgo+
		" for towers, rotor-ops for stages with operation options, else rotor)")
	fl.StringArrayVar(&f.towers.chains, "chain", nil, "chain file (chainplan.chain/v1 JSON); for "+
		orList(planner.MultichainAlgos())+" one per tower, or a chainplan.multichain/v1 bundle")
	fl.StringVar(&f.towers.loss, "loss", "", "the joint loss of the towers (JSON: fwd_time, bwd_time, fwd_tmp_bytes, bwd_tmp_bytes)")
	fl.BoolSliceVar(&f.towers.keep, "keep-input-grad", nil, "per tower, keep the gradient of its input (e.g. true,false)")
	fl.StringVar(&f.budget, "budget", "", "memory budget: bytes, a size such as 2GiB, or 'min'")
	fl.Int64Var(&f.slots, "slots", 500, "memory slots of the discretization (the offloading algorithms default to their own)")
	fl.IntVar(&f.segments, "segments", 0, "segment count for --algo "+
		orList(algoNames(func(e planner.Entry) bool { return e.Reads(planner.FieldSegments) }))+" (0: best that fits)")
	fl.StringVar(&f.format, "format", "json", "output format: json or text")
	fl.StringVar(&f.run, "run", "", "plan a stored profile instead of --chain (a run id or \"latest\"); records the plan")
	fl.StringVar(&f.bandwidth, "bandwidth", "", "GPU-host bandwidth of the offloading algorithms: bytes per second, or with a unit such as 12GB/s")
	return cmd
}

func runSolve(cmd *cobra.Command, e *env, f solveFlags) error {
	w := e.stdout
	if err := checkFormat(f.format, "json", "text"); err != nil {
		return err
	}
	if len(f.towers.chains) == 0 && f.run == "" {
		return usagef("--chain is required (or --run RUN to plan a stored profile)")
	}
	if len(f.towers.chains) > 0 && f.run != "" {
		return usagef("--chain and --run are mutually exclusive")
	}
	if f.run != "" && (f.towers.loss != "" || len(f.towers.keep) > 0) {
		return usagef("--loss and --keep-input-grad apply to chain files; a stored run of towers holds its loss")
	}
	if f.algo != "" && !isMultichainAlgo(f.algo) {
		if err := checkSingleChain(f.towers, f.algo, planner.MultichainAlgos()); err != nil {
			return err
		}
	}
	if f.slots <= 0 {
		return usagef("--slots must be positive (got %d)", f.slots)
	}
	// --budget min: one search gives the plan at the smallest budget (service.Solve).
	req := service.Request{Request: planner.Request{Algo: f.algo, Slots: f.slots, Segments: f.segments},
		Min: f.budget == "min", Source: service.SourceCLI}
	if f.algo == "" && f.bandwidth != "" { // no default algorithm reads a link
		return usagef("--bandwidth applies to the offloading algorithms only: name one with --algo (%s)",
			strings.Join(algoNames(func(e planner.Entry) bool { return e.Reads(planner.FieldBandwidth) }), ", "))
	}
	if err := offloadRequest(cmd, &req.Request, f.bandwidth); err != nil {
		return err
	}
	if !req.Min {
		var err error
		if req.BudgetBytes, err = parseBudget(f.budget); err != nil {
			return err
		}
	}
	got, err := solveInput(cmd, e, f, req)
	if err != nil {
		return err
	}
	if f.format == "json" {
		return writeJSON(w, got.Plan)
	}
	if got.MultiChain != nil { // towers: files, a bundle or a stored run of towers
		writeMultichainPlanText(w, got.MultiChain, got.Plan)
		return nil
	}
	writePlanText(w, got.Chain, got.Plan)
	return nil
}

// writeFiguresText prints a plan's peak, makespan (against sum, the time without
// recomputation), solve time and candidates.
func writeFiguresText(w io.Writer, p *chainplan.Plan, sum float64) {
	fmt.Fprintf(w, "peak        %s\n", bytesLabel(p.PeakBytes))
	fmt.Fprintf(w, "makespan    %.6g", p.Makespan)
	if sum > 0 {
		fmt.Fprintf(w, " (+%.1f%% over the %.6g of no recomputation)", 100*(p.Makespan/sum-1), sum)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "solve time  %.3f ms\n", p.SolveMS)
	writeCandidatesText(w, p)
}

// writePlanText prints a plan for people: its figures, then the sequence.
func writePlanText(w io.Writer, c *chainplan.Chain, p *chainplan.Plan) {
	sum := c.SumTime()
	fmt.Fprintf(w, "algorithm   %s", p.Algo)
	if p.Segments > 0 {
		fmt.Fprintf(w, " (%d segments)", p.Segments)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "budget      %s", bytesLabel(p.BudgetBytes))
	if p.Slots > 0 {
		fmt.Fprintf(w, ", %d slots", p.Slots)
	}
	fmt.Fprintln(w)
	writeFiguresText(w, p, sum)
	fmt.Fprintf(w, "sequence    %d operations (%d stages + loss)\n", len(p.Sequence), c.Len())
	writeSequence(w, p.Sequence)
	writeOffloadText(w, p)
}
