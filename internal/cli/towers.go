package cli

import (
	"fmt"
	"io"
	"slices"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/service"
	"github.com/chainplan/chainplan/planner"
)

// This file holds what the commands share for towers joined at the loss (the multichain
// algorithms, docs/multichain.md): the source the flags name (service.Resolve reads the
// files) and printing a plan.

// towerFlags are the flags that name the towers of a bundle: one --chain per tower (or one
// chainplan.multichain/v1 bundle), --loss for the joint loss, and --keep-input-grad.
type towerFlags struct {
	chains []string
	loss   string
	keep   []bool
}

// isMultichainAlgo reports whether algo names a multichain algorithm.
func isMultichainAlgo(algo string) bool {
	return slices.Contains(planner.MultichainAlgos(), algo)
}

// source is the source envelope the flags name (service.Resolve reads it): towers given
// as files (service.TowerFiles) where several --chain, a --loss or --keep-input-grad are
// given or forTowers asks for them (an algorithm for towers: one chain file is then one
// tower), else the one --chain file, which Resolve tells a chain from a bundle by its
// content.
func (f towerFlags) source(forTowers bool) service.Source {
	if forTowers || len(f.chains) > 1 || f.loss != "" || len(f.keep) > 0 {
		return service.Source{Towers: &service.TowerFiles{Chains: f.chains, Loss: f.loss, KeepInputGrad: f.keep}}
	}
	if len(f.chains) == 1 {
		return service.Source{ChainPath: f.chains[0]}
	}
	return service.Source{}
}

// checkSingleChain refuses the flags of towers (several --chain, --loss, --keep-input-grad)
// given to single-chain algorithm algo, before anything is read, pointing to the
// algorithms for towers that do what the command does (towerAlgos: frontier's are not all
// of them).
func checkSingleChain(f towerFlags, algo string, towerAlgos []string) error {
	multi := "--algo " + orList(towerAlgos)
	switch {
	case len(f.chains) > 1:
		return usagef("--chain given %d times: only the algorithms for towers joined at the loss take several chains "+
			"(%s)", len(f.chains), multi)
	case f.loss != "" || len(f.keep) > 0:
		return usagef("--loss and --keep-input-grad apply to towers joined at the loss (%s), not to %s", multi, algo)
	}
	return nil
}

// refuseBundle refuses a --chain file that Resolve read as a bundle (in) for
// single-chain algorithm algo, pointing to towerAlgos.
func refuseBundle(in *service.Input, towerAlgos []string) error {
	if in.MultiChain != nil && in.File != "" {
		return usagef("%s is a bundle of towers joined at the loss: plan it with --algo %s", in.File, orList(towerAlgos))
	}
	return nil
}

// writeMultichainPlanText prints a multichain plan for people: its figures, the plans it
// compared, then the sequence.
func writeMultichainPlanText(w io.Writer, mc *chainplan.MultiChain, p *chainplan.Plan) {
	m := p.Multichain
	sum := mc.SumTime()
	fmt.Fprintf(w, "algorithm   %s\n", p.Algo)
	fmt.Fprintf(w, "towers      %d with %v stages, keep_input_grad %v\n", mc.K(), mc.Lengths(), m.KeepInputGrad)
	fmt.Fprintf(w, "budget      %s", bytesLabel(p.BudgetBytes))
	switch {
	case m.UnitBytes > 0:
		fmt.Fprintf(w, ", %d slots of %s above a reserve of %s", p.Slots, bytesLabel(m.UnitBytes), bytesLabel(m.ReserveBytes))
	case len(m.Order) > 0:
		fmt.Fprintf(w, ", %d slots, towers concatenated in the order %v", p.Slots, m.Order)
	}
	fmt.Fprintln(w)
	writeFiguresText(w, p, sum)
	if len(m.Decisions) > 0 {
		fmt.Fprintf(w, "decisions   ")
		for i, d := range m.Decisions {
			if i > 0 {
				fmt.Fprint(w, ", ")
			}
			fmt.Fprintf(w, "%d×%d", d.Branch, d.Steps)
		}
		fmt.Fprintln(w, " (tower×stages forwarded from a checkpoint, in order)")
	}
	fmt.Fprintf(w, "sequence    %d operations (branch.stage; the loss is branch 0)\n", len(p.Sequence))
	writeSequence(w, p.Sequence)
}
