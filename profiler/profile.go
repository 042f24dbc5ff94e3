package profiler

import (
	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/profile"
)

// Profile is the content of a profile file: its provenance and its rows, in file order.
type Profile struct {
	Meta profile.Metadata
	Rows []profile.Row
}

// Stages aggregates the rows into one stage per stage index, in index order (the loss, if
// any, last), as medians over the repetitions (profile.StagesOf).
func (p *Profile) Stages() []profile.Stage {
	return profile.StagesOf(p.Rows)
}

// Chain returns the chainplan.chain/v1 chain of the profile: the medians of Stages, the
// chain input a_0 taken as stage 1's in_bytes, and the loss row (all zero when absent).
// A stage whose saved or temporary sizes were never measured (nulls, as chainplan.record
// writes) makes a *chainplan.ChainError naming the stage and the field, since no planner
// can use it (profile.ChainOf).
func (p *Profile) Chain() (*chainplan.Chain, error) {
	return profile.ChainOf(p.Stages())
}
