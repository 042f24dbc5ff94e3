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
	algo, format string
	slots        int64
	towers       towerFlags // --chain (one, or one per tower for multichain), --loss, --keep-input-grad
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
and --loss (or one chainplan.multichain/v1 bundle); it is the multi-chain DP's makespan at
every budget (slots of the largest activation above the reserve, docs/multichain.md) and
no recomputation from its peak on.`,
		Example: `  chainplan frontier --chain examples/resnet50.json
  chainplan frontier --chain c.json --algo revolve --slots 1000 --format json
  chainplan frontier --algo multichain --chain image.json --chain text.json --loss loss.json`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runFrontier(e.stdout, f)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&f.towers.chains, "chain", nil, "chain file (chainplan.chain/v1 JSON); for multichain one per tower, or a bundle")
	fl.StringVar(&f.towers.loss, "loss", "", "the joint loss of the towers (multichain)")
	fl.BoolSliceVar(&f.towers.keep, "keep-input-grad", nil, "per tower, keep the gradient of its input (multichain)")
	fl.StringVar(&f.algo, "algo", "", "algorithm: "+orList(algoNames(planner.HasFrontier))+
		" (default: the input's, as solve picks it: multichain for towers, rotor-ops for stages with options, else rotor)")
	fl.Int64Var(&f.slots, "slots", 500, "memory slots of the discretization")
	fl.StringVar(&f.format, "format", "table", "output format: table or json")
	return cmd
}

func runFrontier(w io.Writer, f frontierFlags) error {
	if err := checkFormat(f.format, "table", "json"); err != nil {
		return err
	}
	if len(f.towers.chains) == 0 {
		return usagef("--chain is required")
	}
	var single *chainplan.Chain // the chain, when reading it chose the default algorithm
	if f.algo == "" {
		algo, c, err := defaultFrontierAlgo(f.towers)
		if err != nil {
			return err
		}
		f.algo, single = algo, c
	}
	e, _ := planner.Lookup(f.algo)
	if !planner.HasFrontier(e) {
		return usagef("frontier: unknown --algo %q (want %s)", f.algo, orList(algoNames(planner.HasFrontier)))
	}
	if f.slots <= 0 {
		return usagef("--slots must be positive (got %d)", f.slots)
	}
	var fr *rotor.Frontier
	if e.Multichain != nil {
		mc, err := readTowers(f.towers)
		if err != nil {
			return err
		}
		if fr, err = planner.FrontierMultichain(mc, planner.Request{Algo: f.algo, Slots: f.slots}); err != nil {
			return err
		}
	} else {
		c := single
		if c == nil {
			path, err := singleChain(f.towers, f.algo)
			if err != nil {
				return err
			}
			if c, err = chainplan.ReadChain(path); err != nil {
				return err
			}
		}
		var err error
		if fr, err = planner.Frontier(c, planner.Request{Algo: f.algo, Slots: f.slots}); err != nil {
			return err
		}
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

// defaultFrontierAlgo is the algorithm solve would plan the input with when --algo is not
// given (planner.DefaultAlgo, planner.DefaultMultichainAlgo), so that the frontier shows
// the trade-off of the plans solve makes; for a single chain, also the chain it read.
func defaultFrontierAlgo(t towerFlags) (string, *chainplan.Chain, error) {
	if describesTowers(t) {
		return planner.DefaultMultichainAlgo, nil, nil
	}
	c, err := chainplan.ReadChain(t.chains[0])
	if err != nil {
		return "", nil, err
	}
	return planner.DefaultAlgo(c), c, nil
}
