package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner"
	"github.com/chainplan/chainplan/planner/rotor"
)

type frontierFlags struct {
	algo, format, run string
	slots             int64
	towers            towerFlags // --chain (one, or one per tower for multichain), --loss, --keep-input-grad
}

func newFrontierCmd(e *env) *cobra.Command {
	var f frontierFlags
	cmd := &cobra.Command{
		Use:   "frontier",
		Short: "Show the whole budget-versus-makespan trade-off of a chain",
		Long: `Compute, from one run of the DP, the optimal makespan at every budget from the
smallest feasible one to the peak of the no-recomputation schedule, and print every budget
where it changes. The discretization is that of the store-all peak (peak/slots bytes a
unit).

With --algo multichain, the frontier of towers joined at the loss: one --chain per tower
and --loss (or one chainplan.multichain/v1 bundle, or --run of a stored profile of towers);
it is the multi-chain DP's makespan at every budget (slots of the largest activation above
the reserve, docs/multichain.md) and no recomputation from its peak on. multichain-linear
has no frontier (it runs rotor on the towers concatenated, budget by budget): plot
frontier draws it at a few budgets beside the DP's.`,
		Example: `  chainplan frontier --chain examples/resnet50.json
  chainplan frontier --chain c.json --algo revolve --slots 1000 --format json
  chainplan frontier --algo multichain --chain image.json --chain text.json --loss loss.json
  chainplan frontier --run latest   # a stored profile: one chain, or towers`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runFrontier(cmd, e.stdout, f)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&f.towers.chains, "chain", nil, "chain file (chainplan.chain/v1 JSON); for multichain one per tower, or a bundle")
	fl.StringVar(&f.run, "run", "", "a stored profile (its id, or latest) instead of --chain: one chain, or towers")
	fl.StringVar(&f.towers.loss, "loss", "", "the joint loss of the towers (multichain)")
	fl.BoolSliceVar(&f.towers.keep, "keep-input-grad", nil, "per tower, keep the gradient of its input (multichain)")
	fl.StringVar(&f.algo, "algo", "", "algorithm: "+orList(algoNames(planner.HasFrontier))+
		" (default: the input's, as solve picks it: multichain for towers, rotor-ops for stages with options, else rotor)")
	fl.Int64Var(&f.slots, "slots", 500, "memory slots of the discretization")
	fl.StringVar(&f.format, "format", "table", "output format: table or json")
	return cmd
}

// frontierInput is what a frontier is computed on: one chain, or towers.
type frontierInput struct {
	chain  *chainplan.Chain
	towers *chainplan.MultiChain
}

func runFrontier(cmd *cobra.Command, w io.Writer, f frontierFlags) error {
	if err := checkFormat(f.format, "table", "json"); err != nil {
		return err
	}
	if f.slots <= 0 {
		return usagef("--slots must be positive (got %d)", f.slots)
	}
	if f.algo != "" {
		if err := checkFrontierAlgo(f.algo); err != nil {
			return err
		}
	}
	in, err := readFrontierInput(cmd, f)
	if err != nil {
		return err
	}
	if f.algo == "" { // the algorithm solve would plan the input with
		f.algo = planner.DefaultMultichainAlgo
		if in.chain != nil {
			f.algo = planner.DefaultAlgo(in.chain)
		}
	}
	var fr *rotor.Frontier
	e, _ := planner.Lookup(f.algo)
	switch {
	case e.Multichain != nil && in.towers == nil:
		return usagef("--algo %s is the frontier of towers joined at the loss: give one --chain per tower (and --loss), a "+
			"bundle, or --run of a profile of towers; this input is one chain, whose frontier is --algo %s's", f.algo,
			orList(singleFrontierAlgos()))
	case e.Multichain != nil:
		fr, err = planner.FrontierMultichain(in.towers, planner.Request{Algo: f.algo, Slots: f.slots})
	case in.towers != nil:
		return usagef("this input is towers joined at the loss: their frontier is --algo %s's, not %s's",
			orList(towerFrontierAlgos()), f.algo)
	default:
		fr, err = planner.Frontier(in.chain, planner.Request{Algo: f.algo, Slots: f.slots})
	}
	if err != nil {
		return err
	}
	if f.format == "json" {
		return writeJSON(w, fr)
	}
	fmt.Fprintf(w, "%s frontier: %d points, %d slots of %s, no-recomputation time %s, store-all peak %s\n",
		fr.Algo, len(fr.Points), fr.Slots, chainplan.FormatBytes(fr.UnitBytes), secondsText(fr.SumTime), bytesLabel(fr.StoreAllPeakByte))
	if e.Multichain != nil {
		fmt.Fprintln(w, "(the multi-chain DP on slots and no recomputation; solve may find a faster plan by rotor on the "+
			"towers concatenated: plot frontier draws both)")
	}
	fmt.Fprintf(w, "%16s  %12s  %14s  %9s\n", "budget_bytes", "budget", "makespan", "overhead")
	for _, p := range fr.Points {
		fmt.Fprintf(w, "%16d  %12s  %14s  %8.2f%%\n", p.BudgetBytes, chainplan.FormatBytes(p.BudgetBytes), secondsText(p.Makespan), 100*p.Overhead)
	}
	return nil
}

// checkFrontierAlgo refuses an algorithm without a frontier, saying what gives one: for
// an algorithm of towers, the one that has a frontier and the picture that draws the
// others.
func checkFrontierAlgo(algo string) error {
	e, ok := planner.Lookup(algo)
	switch {
	case ok && planner.HasFrontier(e):
		return nil
	case ok && e.Multichain != nil:
		return usagef("--algo %s has no frontier: it plans each budget on its own (rotor on the towers concatenated); "+
			"the frontier of towers is --algo %s's, and chainplan plot frontier draws %s at a few budgets beside it",
			algo, orList(towerFrontierAlgos()), algo)
	}
	if ok {
		return usagef("--algo %s has no frontier (these have one: %s)", algo, orList(algoNames(planner.HasFrontier)))
	}
	return usagef("frontier: unknown --algo %q (want %s)", algo, orList(algoNames(planner.HasFrontier)))
}

// readFrontierInput reads the chain or the towers the flags name through the source
// envelope: --run (a stored profile of one chain or of towers), several --chain files with
// --loss (towers), or one --chain file (a chain, or a bundle of towers).
func readFrontierInput(cmd *cobra.Command, f frontierFlags) (frontierInput, error) {
	towers := f.towers.source(false)
	switch {
	case f.run != "" && towers.Given():
		return frontierInput{}, usagef("give --chain (and --loss, --keep-input-grad) or --run, not both")
	case f.run == "" && len(f.towers.chains) == 0:
		return frontierInput{}, usagef("--chain is required (or --run RUN for a stored profile)")
	}
	e, _ := planner.Lookup(f.algo)
	single := f.algo != "" && e.Multichain == nil
	if single {
		// A single-chain algorithm given towers: say which frontier they have.
		if err := checkSingleChain(f.towers, f.algo, towerFrontierAlgos()); err != nil {
			return frontierInput{}, err
		}
	}
	svc, in, err := resolveSource(cmd, f.run, towers)
	if err != nil {
		return frontierInput{}, err
	}
	if svc != nil {
		defer svc.Close()
	}
	if single {
		if err := refuseBundle(in, towerFrontierAlgos()); err != nil {
			return frontierInput{}, err
		}
	}
	tw, err := in.Towers()
	if err != nil {
		return frontierInput{}, err
	}
	if tw {
		mc, err := in.MultiChainOf(cmd.Context())
		return frontierInput{towers: mc}, err
	}
	c, err := in.ChainOf(cmd.Context())
	return frontierInput{chain: c}, err
}

// towerFrontierAlgos lists the algorithms for towers that have a frontier.
func towerFrontierAlgos() []string {
	return algoNames(func(e planner.Entry) bool { return e.Multichain != nil && planner.HasFrontier(e) })
}

// singleFrontierAlgos lists the algorithms with a frontier of one chain.
func singleFrontierAlgos() []string {
	return algoNames(func(e planner.Entry) bool { return e.Multichain == nil && planner.HasFrontier(e) })
}
