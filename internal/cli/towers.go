package cli

import (
	"fmt"
	"io"
	"slices"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner"
)

// This file holds what the commands share for towers joined at the loss (the multichain
// algorithms, docs/multichain.md): reading the bundle from the flags and printing a plan.

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

// describesTowers reports whether the --chain, --loss and --keep-input-grad flags describe towers
// joined at the loss (several chains, a joint loss, or one bundle file): what solve plans
// with the multichain default when --algo is not given.
func describesTowers(f towerFlags) bool {
	return len(f.chains) > 1 || f.loss != "" || len(f.keep) > 0 || (len(f.chains) == 1 && fileIsBundle(f.chains[0]))
}

// fileIsBundle reports whether path holds a chainplan.multichain bundle (a path that is
// no regular file with content is not: the reader that follows reports it, and a named
// pipe is not opened).
func fileIsBundle(path string) bool {
	data, err := chainplan.ReadInput(path, "")
	return err == nil && chainplan.IsMultiChain(data)
}

// readTowers reads the bundle the flags name: a single bundle file, or K ≥ 1 chain files,
// one per tower, joined by the loss of --loss (zero when not given) with --keep-input-grad.
// A chain file with a loss of its own is refused, naming the file: the joint loss goes in
// --loss.
func readTowers(f towerFlags) (*chainplan.MultiChain, error) {
	if len(f.chains) == 0 {
		return nil, usagef("--chain is required: one chain file per tower (or one chainplan.multichain/v1 bundle)")
	}
	if len(f.chains) == 1 && fileIsBundle(f.chains[0]) {
		if f.loss != "" || len(f.keep) > 0 {
			return nil, usagef("%s is a bundle: it holds its loss and keep_input_grad (--loss and --keep-input-grad "+
				"apply to separate chain files)", f.chains[0])
		}
		return chainplan.ReadMultiChain(f.chains[0])
	}
	mc := &chainplan.MultiChain{Format: chainplan.MultiChainFormat, KeepInputGrad: f.keep}
	for j, path := range f.chains {
		if fileIsBundle(path) {
			return nil, usagef("%s is a bundle: give it alone, or one chain file per tower", path)
		}
		c, err := chainplan.ReadChain(path)
		if err != nil {
			return nil, err
		}
		if c.Loss != (chainplan.Loss{}) {
			return nil, &usageError{fmt.Errorf("--chain %s (branch %d) has a loss of its own: a tower's output goes "+
				"to the joint loss, which --loss gives; set that chain's loss to zero or leave it out", path, j+1)}
		}
		mc.Branches = append(mc.Branches, *c.Conservative()) // the multichain planners read version 1
	}
	if f.loss != "" {
		data, err := chainplan.ReadInput(f.loss, "a loss (JSON: fwd_time, bwd_time, fwd_tmp_bytes, bwd_tmp_bytes)")
		if err != nil {
			return nil, &usageError{fmt.Errorf("--loss: %w", err)}
		}
		if mc.Loss, err = chainplan.ParseLoss(data); err != nil {
			return nil, fmt.Errorf("--loss %s: %w", f.loss, err)
		}
	}
	if n := len(f.keep); n > 0 && n != len(f.chains) {
		return nil, usagef("--keep-input-grad has %d values for %d towers", n, len(f.chains))
	}
	if err := mc.Validate(); err != nil {
		return nil, err
	}
	return mc, nil
}

// singleChain returns the one chain file of a single-chain command, refusing several and
// bundles with a pointer to the multichain algorithms.
func singleChain(f towerFlags, algo string) (string, error) {
	return singleChainFor(f, algo, planner.MultichainAlgos())
}

// singleChainFor is singleChain pointing to the algorithms for towers named: those that
// do what the command does (frontier's are not all of them).
func singleChainFor(f towerFlags, algo string, towerAlgos []string) (string, error) {
	multi := "--algo " + orList(towerAlgos)
	switch {
	case len(f.chains) > 1:
		return "", usagef("--chain given %d times: only the algorithms for towers joined at the loss take several chains "+
			"(%s)", len(f.chains), multi)
	case f.loss != "" || len(f.keep) > 0:
		return "", usagef("--loss and --keep-input-grad apply to towers joined at the loss (%s), not to %s", multi, algo)
	case len(f.chains) == 1 && fileIsBundle(f.chains[0]):
		return "", usagef("%s is a bundle of towers joined at the loss: plan it with %s", f.chains[0], multi)
	case len(f.chains) == 1:
		return f.chains[0], nil
	}
	return "", nil
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
