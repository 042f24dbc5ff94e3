package chainplan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Reading and validating a chain: the rules of docs/formats.md, every error a *ChainError
// naming the stage and the field. It sits above the model (chain.go) and the exact memory
// model's rules (exact.go), which it applies to version 2 stages.

// Validate checks every field of the chain and returns a *ChainError naming the first bad
// stage and field.
func (c *Chain) Validate() error { return c.validate(0) }

// validate is Validate for a chain on its own (branch 0) or for branch branch of a
// multichain bundle, which may have no stages (an input that goes straight into the joint
// loss) and whose errors name the branch. A branch is a version 1 chain: the multichain
// planners read the conservative model (Chain.Conservative gives it).
func (c *Chain) validate(branch int) error {
	if err := checkChainFormat(c.Format, branch); err != nil {
		return branchError(branch, err)
	}
	if c.InputBytes < 0 {
		return &ChainError{Branch: branch, Field: "input_bytes", Msg: fmt.Sprintf("negative value %d", c.InputBytes)}
	}
	if len(c.Stages) == 0 && branch == 0 {
		return &ChainError{Field: "stages", Msg: "the chain has no stages"}
	}
	for i, s := range c.Stages {
		bad := func(field, msg string) error {
			return &ChainError{Branch: branch, Stage: i + 1, Name: s.Name, Field: field, Msg: msg}
		}
		for _, f := range []struct {
			name string
			v    float64
		}{{"fwd_time", s.FwdTime}, {"bwd_time", s.BwdTime}} {
			if msg := checkTime(f.v); msg != "" {
				return bad(f.name, msg)
			}
		}
		for _, f := range []struct {
			name string
			v    int64
		}{{"out_bytes", s.OutBytes}, {"saved_bytes", s.SavedBytes}, {"fwd_tmp_bytes", s.FwdTmpBytes},
			{"bwd_tmp_bytes", s.BwdTmpBytes}, {"param_bytes", s.ParamBytes}} {
			if f.v < 0 {
				return bad(f.name, fmt.Sprintf("negative value %d", f.v))
			}
		}
		// The last stage's output goes to the loss, which may consume it: when neither the
		// stage nor the loss keeps it, ā_L is what the stage keeps besides it (possibly
		// less than a_L) and the loss's fwd_tmp_bytes carries a_L (docs/formats.md).
		if s.SavedBytes < s.OutBytes && i < len(c.Stages)-1 {
			return bad("saved_bytes", fmt.Sprintf("%d is smaller than out_bytes %d (saved bytes include the output)",
				s.SavedBytes, s.OutBytes))
		}
		if err := validateExact(i+1, &c.Stages[i]); err != nil {
			return err
		}
	}
	if branch > 0 && c.Loss != (Loss{}) {
		return &ChainError{Branch: branch, Stage: LossStage, Msg: "a branch has no loss of its own: " +
			"the joint loss of the towers is the bundle's \"loss\" (--loss on the command line)"}
	}
	return c.Loss.validate(branch)
}

// validate checks the loss's fields; branch names the branch of a bundle whose loss it is
// (0: a chain's loss or a bundle's joint loss).
func (l *Loss) validate(branch int) error {
	bad := func(field, msg string) error {
		return &ChainError{Branch: branch, Stage: LossStage, Field: field, Msg: msg}
	}
	if msg := checkTime(l.FwdTime); msg != "" {
		return bad("fwd_time", msg)
	}
	if msg := checkTime(l.BwdTime); msg != "" {
		return bad("bwd_time", msg)
	}
	if l.FwdTmpBytes < 0 {
		return bad("fwd_tmp_bytes", fmt.Sprintf("negative value %d", l.FwdTmpBytes))
	}
	if l.BwdTmpBytes < 0 {
		return bad("bwd_tmp_bytes", fmt.Sprintf("negative value %d", l.BwdTmpBytes))
	}
	return nil
}

// requiredStageFields are the stage fields a chain file must spell out; param_bytes and name
// are optional.
var requiredStageFields = []string{"fwd_time", "bwd_time", "out_bytes", "saved_bytes", "fwd_tmp_bytes", "bwd_tmp_bytes"}

// v2StageFields are the optional stage fields of version 2, checked apart from the numbers.
var v2StageFields = map[string]bool{"saves_input": true, "saves_output": true, "recompute_time": true,
	"recompute_tmp_bytes": true, "options": true, "replay_bytes": true}

// ParseChain decodes and validates a chainplan.chain/v1 or v2 document. Unknown fields
// (the version 2 fields in a version 1 document among them), missing required fields,
// fractional byte counts and non-finite numbers are errors that name the stage and the
// field.
func ParseChain(data []byte) (*Chain, error) { return parseChain(data, 0) }

// parseChain is ParseChain for a chain on its own (branch 0) or for branch branch of a
// multichain bundle: there the format may be left out, the stages may be empty, every
// error names the branch, and the chain is a version 1 chain.
func parseChain(data []byte, branch int) (*Chain, error) {
	// A first pass over raw messages finds the stage and field of any problem that
	// encoding/json would otherwise report only as a byte offset.
	chainErr := func(stage int, name, field, msg string) error {
		return &ChainError{Branch: branch, Stage: stage, Name: name, Field: field, Msg: msg}
	}
	format, present, err := jsonFormat(data)
	switch {
	case err != nil && !present:
		return nil, branchError(branch, fmt.Errorf("%w: %s", ErrInvalidChain, describeJSONError(data, err)))
	case err != nil:
		return nil, chainErr(0, "", "format", err.Error())
	case !present && branch == 0:
		return nil, chainErr(0, "", "format", fmt.Sprintf("missing; want %q", ChainFormat))
	case present:
		if err := checkChainFormat(format, branch); err != nil {
			return nil, branchError(branch, err)
		}
	}
	var raw struct {
		InputBytes json.RawMessage              `json:"input_bytes"`
		Stages     []map[string]json.RawMessage `json:"stages"`
		Loss       map[string]json.RawMessage   `json:"loss"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, branchError(branch, fmt.Errorf("%w: %s", ErrInvalidChain, describeJSONError(data, err)))
	}
	v2 := format == ChainFormatV2
	if raw.InputBytes == nil {
		return nil, chainErr(0, "", "input_bytes", "missing")
	}
	if err := checkNumber(raw.InputBytes, true); err != "" {
		return nil, chainErr(0, "", "input_bytes", err)
	}
	if len(raw.Stages) == 0 && branch == 0 {
		return nil, chainErr(0, "", "stages", "the chain has no stages")
	}
	stageKinds := map[string]bool{"name": false, "param_bytes": true}
	for _, f := range requiredStageFields {
		stageKinds[f] = strings.HasSuffix(f, "_bytes")
	}
	for i, st := range raw.Stages {
		name := ""
		if n, ok := st["name"]; ok {
			_ = json.Unmarshal(n, &name)
		}
		for _, f := range requiredStageFields {
			if _, ok := st[f]; !ok {
				return nil, chainErr(i+1, name, f, "missing")
			}
		}
		for f, v := range st {
			if v2StageFields[f] {
				if !v2 {
					return nil, chainErr(i+1, name, f,
						fmt.Sprintf("unknown field in a %s chain (it is a field of %s)", ChainFormat, ChainFormatV2))
				}
				if msg := checkV2Field(f, v); msg != "" {
					return nil, chainErr(i+1, name, f, msg)
				}
				continue
			}
			integer, known := stageKinds[f]
			if !known {
				return nil, chainErr(i+1, name, f, "unknown field")
			}
			if f == "name" {
				continue
			}
			if msg := checkNumber(v, integer); msg != "" {
				return nil, chainErr(i+1, name, f, msg)
			}
		}
	}
	if err := checkLossFields(raw.Loss, branch); err != nil {
		return nil, err
	}

	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var c Chain
	if err := dec.Decode(&c); err != nil {
		return nil, branchError(branch, fmt.Errorf("%w: %s", ErrInvalidChain, describeJSONError(data, err)))
	}
	if c.Format == "" {
		c.Format = ChainFormat
	}
	if err := c.validate(branch); err != nil {
		return nil, err
	}
	return &c, nil
}

// checkChainFormat checks the format tag of a chain on its own (version 1 or 2) or of
// branch branch of a bundle (version 1: the multichain planners read the conservative
// model).
func checkChainFormat(tag string, branch int) error {
	if branch > 0 {
		return CheckFormat(tag, ErrInvalidChain, ChainFormat)
	}
	return CheckFormat(tag, ErrInvalidChain, ChainFormat, ChainFormatV2)
}

// checkLossFields checks the raw fields of a loss object: known names, non-negative
// numbers, whole byte counts.
func checkLossFields(loss map[string]json.RawMessage, branch int) error {
	lossKinds := map[string]bool{"fwd_time": false, "bwd_time": false, "fwd_tmp_bytes": true, "bwd_tmp_bytes": true}
	for f, v := range loss {
		integer, known := lossKinds[f]
		if !known {
			return &ChainError{Branch: branch, Stage: LossStage, Field: f, Msg: "unknown field"}
		}
		if msg := checkNumber(v, integer); msg != "" {
			return &ChainError{Branch: branch, Stage: LossStage, Field: f, Msg: msg}
		}
	}
	return nil
}

// branchError prefixes err with the branch of a bundle it concerns (none for branch 0).
func branchError(branch int, err error) error {
	if branch == 0 {
		return err
	}
	return fmt.Errorf("branch %d: %w", branch, err)
}

// ReadChain reads and validates a chain file.
func ReadChain(path string) (*Chain, error) {
	data, err := ReadInput(path, "a chain file ("+ChainFormat+" JSON)")
	if err != nil {
		return nil, err
	}
	c, err := ParseChain(data)
	if err != nil {
		return nil, fmt.Errorf("read chain %s: %w", path, err)
	}
	return c, nil
}
