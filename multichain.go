package chainplan

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// MultiChainFormat is the format tag of version 1 of the multichain bundle.
const MultiChainFormat = "chainplan.multichain/v1"

// MultiChain is a model of K towers joined at the loss (specs/multichain.md §1.1, the
// K-Join): K independent chains ("branches") whose outputs all go into one joint loss,
// such as the image and text towers of a CLIP-style dual encoder or the three copies of a
// triplet network. It is what the multichain planners read (docs/multichain.md).
//
// Branch j (1-based, Branches[j-1]) is a chainplan.chain/v1 chain: its InputBytes is the
// tower's input a_0^(j) and its stages are 1..L_j. A branch may have no stages (an input
// that goes straight into the loss, such as a precomputed embedding) and has no loss of its
// own: Loss is the joint loss, whose inputs are the K tower outputs and which yields one
// gradient per tower, of the output's size.
type MultiChain struct {
	Format   string  `json:"format"`
	Branches []Chain `json:"branches"`
	Loss     Loss    `json:"loss"`
	// KeepInputGrad says, per branch, whether the gradient of the tower's input is kept
	// after the plan runs (b of spec §2): set it when something upstream consumes it, a
	// trainable embedding table feeding the tower for instance. Empty means all false.
	KeepInputGrad []bool `json:"keep_input_grad,omitempty"`
}

// K returns the number of branches.
func (m *MultiChain) K() int { return len(m.Branches) }

// Keep reports whether the gradient of branch j's input (1-based) is kept.
func (m *MultiChain) Keep(j int) bool { return len(m.KeepInputGrad) >= j && m.KeepInputGrad[j-1] }

// Lengths returns L_j, the number of stages of each branch, in branch order.
func (m *MultiChain) Lengths() []int {
	ls := make([]int, len(m.Branches))
	for j := range m.Branches {
		ls[j] = m.Branches[j].Len()
	}
	return ls
}

// SumTime returns the makespan of a schedule without recomputation: Σ(u_F+u_B) over every
// branch's stages plus the joint loss, a lower bound for every schedule.
func (m *MultiChain) SumTime() float64 {
	total := m.Loss.FwdTime + m.Loss.BwdTime
	for j := range m.Branches {
		total += m.Branches[j].SumTime()
	}
	return total
}

// Validate checks the bundle: at least one branch, every branch a valid chain without a
// loss of its own, a valid joint loss, and one keep_input_grad value per branch when
// given. It returns a *ChainError naming the branch, stage and field.
func (m *MultiChain) Validate() error {
	if err := CheckFormat(m.Format, ErrInvalidChain, MultiChainFormat); err != nil {
		return err
	}
	if len(m.Branches) == 0 {
		return &ChainError{Field: "branches", Msg: "the bundle has no branches (K = 0): give one chain per tower"}
	}
	if n := len(m.KeepInputGrad); n != 0 && n != len(m.Branches) {
		return &ChainError{Field: "keep_input_grad", Msg: fmt.Sprintf("%d values for %d branches", n, len(m.Branches))}
	}
	for j := range m.Branches {
		if err := m.Branches[j].validate(j + 1); err != nil {
			return err
		}
	}
	return m.Loss.validate(0)
}

// ParseMultiChain decodes and validates a chainplan.multichain/v1 document. Each branch is
// read as a chain file is (ParseChain), its format tag optional; errors name the branch,
// the stage and the field.
func ParseMultiChain(data []byte) (*MultiChain, error) {
	format, present, err := jsonFormat(data)
	switch {
	case err != nil && !present:
		return nil, fmt.Errorf("%w: %s", ErrInvalidChain, describeJSONError(data, err))
	case err != nil:
		return nil, &ChainError{Field: "format", Msg: err.Error()}
	case !present:
		return nil, &ChainError{Field: "format", Msg: fmt.Sprintf("missing; want %q", MultiChainFormat)}
	}
	if err := CheckFormat(format, ErrInvalidChain, MultiChainFormat); err != nil {
		return nil, err
	}
	var raw struct {
		Format        string                     `json:"format"`
		Branches      *[]json.RawMessage         `json:"branches"`
		Loss          map[string]json.RawMessage `json:"loss"`
		KeepInputGrad []bool                     `json:"keep_input_grad"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrInvalidChain, describeJSONError(data, err))
	}
	if raw.Branches == nil {
		return nil, &ChainError{Field: "branches", Msg: "missing; want one chain per tower"}
	}
	if err := checkLossFields(raw.Loss, 0); err != nil {
		return nil, err
	}
	m := &MultiChain{Format: MultiChainFormat, KeepInputGrad: raw.KeepInputGrad}
	for j, b := range *raw.Branches {
		c, err := parseChain(b, j+1)
		if err != nil {
			return nil, err
		}
		m.Branches = append(m.Branches, *c)
	}
	if raw.Loss != nil {
		ld, _ := json.Marshal(raw.Loss) // the fields were checked above
		if err := json.Unmarshal(ld, &m.Loss); err != nil {
			return nil, fmt.Errorf("%w: loss: %v", ErrInvalidChain, err)
		}
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}

// ParseLoss decodes and validates a joint loss on its own, the object
// {"fwd_time", "bwd_time", "fwd_tmp_bytes", "bwd_tmp_bytes"} (every field optional, zero by
// default), as `chainplan solve --loss FILE` reads it.
func ParseLoss(data []byte) (Loss, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return Loss{}, fmt.Errorf("%w: loss: %s", ErrInvalidChain, describeJSONError(data, err))
	}
	if err := checkLossFields(raw, 0); err != nil {
		return Loss{}, err
	}
	var l Loss
	if err := json.Unmarshal(data, &l); err != nil {
		return Loss{}, fmt.Errorf("%w: loss: %s", ErrInvalidChain, describeJSONError(data, err))
	}
	return l, l.validate(0)
}

// IsMultiChain reports whether data is a JSON object whose format names a bundle
// (chainplan.multichain/vN, whatever N: ParseMultiChain refuses a version it does not read
// by name) rather than a chain, so that a command reading either can tell them apart.
func IsMultiChain(data []byte) bool {
	var head struct {
		Format string `json:"format"`
	}
	return json.Unmarshal(data, &head) == nil && SameKind(head.Format, MultiChainFormat)
}

// ReadMultiChain reads and validates a bundle file.
func ReadMultiChain(path string) (*MultiChain, error) {
	data, err := ReadInput(path, "a multichain bundle ("+MultiChainFormat+" JSON)")
	if err != nil {
		return nil, err
	}
	m, err := ParseMultiChain(data)
	if err != nil {
		return nil, fmt.Errorf("read bundle %s: %w", path, err)
	}
	return m, nil
}

// MarshalIndent returns the bundle as an indented chainplan.multichain/v1 document.
func (m *MultiChain) MarshalIndent() ([]byte, error) {
	out := *m
	if out.Format == "" {
		out.Format = MultiChainFormat
	}
	b, err := json.MarshalIndent(&out, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
