package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner"
)

type frontierFlags struct {
	chain, algo, format string
	slots               int64
}

func newFrontierCmd(e *env) *cobra.Command {
	var f frontierFlags
	cmd := &cobra.Command{
		Use:   "frontier",
		Short: "Show the whole budget-versus-makespan trade-off of a chain",
		Long: `Compute, from one run of the DP, the optimal makespan at every budget from the
smallest feasible one to the peak of the no-recomputation schedule, and print every budget
where it changes. The discretization is that of the store-all peak (peak/slots bytes a
unit).`,
		Example: `  chainplan frontier --chain examples/resnet50.json
  chainplan frontier --chain c.json --algo revolve --slots 1000 --format json`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runFrontier(e.stdout, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.chain, "chain", "", "chain file (chainplan.chain/v1 JSON)")
	fl.StringVar(&f.algo, "algo", "rotor", "algorithm: "+orList(algoNames(hasFrontier)))
	fl.Int64Var(&f.slots, "slots", 500, "memory slots of the discretization")
	fl.StringVar(&f.format, "format", "table", "output format: table or json")
	return cmd
}

func runFrontier(w io.Writer, f frontierFlags) error {
	if err := checkFormat(f.format, "table", "json"); err != nil {
		return err
	}
	if f.chain == "" {
		return usagef("--chain is required")
	}
	e, _ := planner.Lookup(f.algo)
	if !hasFrontier(e) {
		return usagef("frontier: unknown --algo %q (want %s)", f.algo, orList(algoNames(hasFrontier)))
	}
	if f.slots <= 0 {
		return usagef("--slots must be positive (got %d)", f.slots)
	}
	c, err := chainplan.ReadChain(f.chain)
	if err != nil {
		return err
	}
	fr, err := e.Schedule.Frontier(c, planner.Request{Algo: f.algo, Slots: f.slots})
	if err != nil {
		return err
	}
	if f.format == "json" {
		return writeJSON(w, fr)
	}
	fmt.Fprintf(w, "%s frontier: %d points, %d slots of %s, no-recomputation time %.6g, store-all peak %s\n",
		fr.Algo, len(fr.Points), fr.Slots, chainplan.FormatBytes(fr.UnitBytes), fr.SumTime, bytesLabel(fr.StoreAllPeakByte))
	fmt.Fprintf(w, "%16s  %12s  %14s  %9s\n", "budget_bytes", "budget", "makespan", "overhead")
	for _, p := range fr.Points {
		fmt.Fprintf(w, "%16d  %12s  %14.6g  %8.2f%%\n", p.BudgetBytes, chainplan.FormatBytes(p.BudgetBytes), p.Makespan, 100*p.Overhead)
	}
	return nil
}
