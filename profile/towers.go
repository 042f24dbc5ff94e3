package profile

import (
	"encoding/json"
	"fmt"

	"github.com/chainplan/chainplan"
)

// KeyTowers is the metadata key of a profile of K towers joined at the loss (a CLIP-style
// dual encoder, a Siamese or triplet network; docs/multichain.md): its value is the JSON of
// a Towers. A profile without it is one chain.
const KeyTowers = "towers"

// Towers describes a profile of towers joined at the loss. Its stages are the stages of
// each distinct tower in turn (tower 0 first, stages numbered on from one tower to the
// next), then the joint loss. Each branch of the model, one per input, runs one tower; a
// tower that several inputs go through (the shared tower of a Siamese network) is profiled
// once and named by several branches.
type Towers struct {
	// Lengths is the number of stages of each distinct tower, in the profile's order; a
	// tower may have none (an input that goes straight into the loss).
	Lengths []int `json:"lengths"`
	// Branches is, for each branch in input order, its tower's index into Lengths.
	Branches []int `json:"branches"`
	// InputBytes is a_0 of each branch: the size of its input.
	InputBytes []int64 `json:"input_bytes"`
	// KeepInputGrad says, per branch, whether the gradient of its input is kept after a
	// step (an input computed by trainable code upstream); empty means none is.
	KeepInputGrad []bool `json:"keep_input_grad,omitempty"`
	// Names are the towers' names, one per tower, for people; optional.
	Names []string `json:"names,omitempty"`
}

// ParseTowers decodes and checks the value of KeyTowers. Errors are *MetadataError values
// naming the key.
func ParseTowers(s string) (*Towers, error) {
	var t Towers
	if err := json.Unmarshal([]byte(s), &t); err != nil {
		return nil, &MetadataError{Key: KeyTowers, Msg: fmt.Sprintf("not a JSON object of lengths, branches and input_bytes: %v", err)}
	}
	bad := func(format string, args ...any) error {
		return &MetadataError{Key: KeyTowers, Msg: fmt.Sprintf(format, args...)}
	}
	switch {
	case len(t.Branches) == 0:
		return nil, bad("no branches (K = 0)")
	case len(t.InputBytes) != len(t.Branches):
		return nil, bad("%d input sizes for %d branches", len(t.InputBytes), len(t.Branches))
	case len(t.KeepInputGrad) != 0 && len(t.KeepInputGrad) != len(t.Branches):
		return nil, bad("%d keep_input_grad values for %d branches", len(t.KeepInputGrad), len(t.Branches))
	case len(t.Names) != 0 && len(t.Names) != len(t.Lengths):
		return nil, bad("%d names for %d towers", len(t.Names), len(t.Lengths))
	}
	for i, l := range t.Lengths {
		if l < 0 {
			return nil, bad("tower %d has %d stages", i, l)
		}
	}
	for j, tw := range t.Branches {
		if tw < 0 || tw >= len(t.Lengths) {
			return nil, bad("branch %d runs tower %d, out of range 0..%d", j+1, tw, len(t.Lengths)-1)
		}
		if t.InputBytes[j] < 0 {
			return nil, bad("branch %d: negative input size %d", j+1, t.InputBytes[j])
		}
	}
	return &t, nil
}

// Towers returns the towers of a profile of towers joined at the loss, or nil when the
// profile is one chain. Errors: a *MetadataError for a malformed value.
func (m *Metadata) Towers() (*Towers, error) {
	s, ok := m.Extra[KeyTowers]
	if !ok {
		return nil, nil
	}
	return ParseTowers(s)
}

// MultiChainOf turns the aggregated stages of a profile of towers (in index order, the
// loss last) into a validated chainplan.multichain/v1 bundle: the stages of each tower
// become a chain, one per branch (a shared tower's chain repeated), with the branch's input
// size; the loss row is the joint loss. Errors: *chainplan.ChainError as for ChainOf, and
// an error wrapping ErrInvalidChain when the stages do not add up to the towers.
func MultiChainOf(stages []StageSummary, t *Towers) (*chainplan.MultiChain, error) {
	n := len(stages)
	var loss *StageSummary
	if n > 0 && stages[n-1].Kind == KindLoss {
		loss, n = &stages[n-1], n-1
	}
	total := 0
	for _, l := range t.Lengths {
		// Each length is checked against the profile's stages before it is added: a sum of
		// absurd lengths could wrap around to n and have a tower's stages allocated.
		if l > n {
			total = l
			break
		}
		total += l
	}
	if total != n {
		return nil, fmt.Errorf("%w: the towers have %v stages (%d in all), the profile %d", chainplan.ErrInvalidChain,
			t.Lengths, total, n)
	}
	towers := make([]chainplan.Chain, len(t.Lengths))
	first := 0
	for i, l := range t.Lengths {
		part := make([]StageSummary, l)
		copy(part, stages[first:first+l])
		for q := range part {
			if part[q].Index != first+q+1 {
				return nil, fmt.Errorf("%w: stage %d is at position %d (stages must be numbered 1..L)",
					chainplan.ErrInvalidChain, part[q].Index, first+q+1)
			}
			part[q].Index = q + 1
		}
		if l > 0 {
			c, err := ChainOf(part)
			if err != nil {
				return nil, fmt.Errorf("tower %d: %w", i, err)
			}
			towers[i] = *c.Conservative() // the multichain planners read version 1
		} else {
			towers[i] = chainplan.Chain{Format: chainplan.ChainFormat}
		}
		first += l
	}
	mc := &chainplan.MultiChain{Format: chainplan.MultiChainFormat, KeepInputGrad: t.KeepInputGrad}
	for j, tw := range t.Branches {
		c := towers[tw]
		c.Stages = append([]chainplan.Stage(nil), c.Stages...)
		c.InputBytes = t.InputBytes[j]
		mc.Branches = append(mc.Branches, c)
	}
	if loss != nil {
		var err error
		if mc.Loss, err = lossOf(loss); err != nil {
			return nil, err
		}
	}
	if err := mc.Validate(); err != nil {
		return nil, err
	}
	return mc, nil
}
