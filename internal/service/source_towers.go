package service

import (
	"fmt"

	"github.com/chainplan/chainplan"
)

// TowerFiles are towers joined at the loss given as separate files ("towers" in Source's
// JSON form; the CLI's repeated --chain with --loss and --keep-input-grad): one chain file
// per tower, each without a loss of its own, the joint loss's file and whether each tower
// keeps the gradient of its input. One chain file alone may instead be a bundle
// (chainplan.multichain/v1), told apart by its content, which holds its loss and
// keep_input_grad. Resolve reads them (towersInput), into the Input's MultiChain.
type TowerFiles struct {
	Chains        []string `json:"chains"`
	Loss          string   `json:"loss,omitempty"`
	KeepInputGrad []bool   `json:"keep_input_grad,omitempty"`
}

// towersInput reads towers t: a bundle file alone, or K ≥ 1 chain files joined by the loss
// of t.Loss (zero when not given) with t.KeepInputGrad. Each file is read as a chain_path
// source is (chainFileInput), so a missing or invalid file gets the same error. A bundle
// among several files, a bundle with a loss or keep_input_grad beside it, a chain with a
// loss of its own and a keep_input_grad of another length are bad input naming the file or
// the field (with the CLI's flag).
func towersInput(t *TowerFiles) (*Input, error) {
	if len(t.Chains) == 0 {
		return nil, &inputError{"source: towers: chains is empty: give one chain file per tower (--chain), or one " +
			chainplan.MultiChainFormat + " bundle"}
	}
	mc := &chainplan.MultiChain{Format: chainplan.MultiChainFormat, KeepInputGrad: t.KeepInputGrad}
	for j, path := range t.Chains {
		in, err := chainFileInput(path)
		if err != nil {
			return nil, err
		}
		switch {
		case in.MultiChain != nil && len(t.Chains) == 1 && t.Loss == "" && len(t.KeepInputGrad) == 0:
			return in, nil
		case in.MultiChain != nil && len(t.Chains) == 1:
			return nil, &inputError{fmt.Sprintf("source: towers: %s is a bundle: it holds its loss and keep_input_grad "+
				"(a loss and keep_input_grad, --loss and --keep-input-grad, apply to separate chain files)", path)}
		case in.MultiChain != nil:
			return nil, &inputError{fmt.Sprintf("source: towers: %s is a bundle: give it alone, or one chain file per tower", path)}
		case in.Chain.Loss != (chainplan.Loss{}):
			return nil, &inputError{fmt.Sprintf("source: towers: chain %s (branch %d) has a loss of its own: a tower's "+
				"output goes to the joint loss, which the towers' loss (--loss) gives; set that chain's loss to zero or "+
				"leave it out", path, j+1)}
		}
		mc.Branches = append(mc.Branches, *in.Chain.Conservative()) // the multichain planners read version 1
	}
	if t.Loss != "" {
		data, err := chainplan.ReadInput(t.Loss, "a loss (JSON: fwd_time, bwd_time, fwd_tmp_bytes, bwd_tmp_bytes)")
		if err != nil {
			return nil, fmt.Errorf("source: towers: loss: %w", err)
		}
		if mc.Loss, err = chainplan.ParseLoss(data); err != nil {
			return nil, fmt.Errorf("source: towers: loss %s: %w", t.Loss, err)
		}
	}
	if n := len(t.KeepInputGrad); n > 0 && n != len(t.Chains) {
		return nil, &inputError{fmt.Sprintf("source: towers: keep_input_grad (--keep-input-grad) has %d values for %d towers",
			n, len(t.Chains))}
	}
	if err := mc.Validate(); err != nil {
		return nil, err
	}
	return &Input{MultiChain: mc}, nil
}
