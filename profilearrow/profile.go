package profilearrow

import (
	"fmt"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/profile"
)

// Profile is the content of a profile file: its provenance and its rows, in file order.
type Profile struct {
	Meta profile.Metadata
	Rows []profile.Row
}

// Stages aggregates the rows into one stage per stage index, in index order (the loss, if
// any, last), as medians over the repetitions (profile.Summarize).
func (p *Profile) Stages() []profile.StageSummary {
	return profile.Summarize(p.Rows)
}

// Chain returns the chainplan.chain/v1 chain of the profile: the medians of Stages, the
// chain input a_0 taken as stage 1's in_bytes, and the loss row (all zero when absent).
// A stage whose saved or temporary sizes were never measured (nulls, as chainplan.record
// writes) makes a *chainplan.ChainError naming the stage and the field, since no planner
// can use it (profile.ChainOf). A profile of towers joined at the loss is no chain: it
// fails with an error wrapping chainplan.ErrUnsupported (use MultiChain).
func (p *Profile) Chain() (*chainplan.Chain, error) {
	if tw, err := p.Meta.Towers(); err != nil || tw != nil {
		if err == nil {
			err = fmt.Errorf("%w: the profile is of %d inputs through towers joined at the loss, not one chain: "+
				"plan it with a multichain algorithm", chainplan.ErrUnsupported, len(tw.Branches))
		}
		return nil, err
	}
	return profile.ChainOf(p.Stages())
}

// MultiChain returns the chainplan.multichain/v1 bundle of a profile of towers joined at
// the loss (profile.MultiChainOf); a profile of one chain fails with an error wrapping
// chainplan.ErrUnsupported.
func (p *Profile) MultiChain() (*chainplan.MultiChain, error) {
	tw, err := p.Meta.Towers()
	if err != nil {
		return nil, err
	}
	if tw == nil {
		return nil, fmt.Errorf("%w: the profile is of one chain, not towers joined at the loss", chainplan.ErrUnsupported)
	}
	return profile.MultiChainOf(p.Stages(), tw)
}
