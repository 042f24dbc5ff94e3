package chainplan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
)

// ChainFormat is the format tag of version 1 of the chain file (ChainFormatV2 adds the
// exact memory model).
const ChainFormat = "chainplan.chain/v1"

// Chain is a model profiled into L stages plus a loss, in the form every planner reads.
// Stage ℓ of the specs is Stages[ℓ-1]; the loss is stage L+1.
type Chain struct {
	Format     string  `json:"format"`
	InputBytes int64   `json:"input_bytes"` // a_0, the size of the chain input
	Stages     []Stage `json:"stages"`
	Loss       Loss    `json:"loss"`
}

// Stage holds the measured costs of one stage.
type Stage struct {
	Name        string  `json:"name"`
	FwdTime     float64 `json:"fwd_time"`      // u_F: time of one forward, any variant
	BwdTime     float64 `json:"bwd_time"`      // u_B: time of the backward
	OutBytes    int64   `json:"out_bytes"`     // a: size of the output (and of its gradient)
	SavedBytes  int64   `json:"saved_bytes"`   // ā: everything F_all keeps for B, output included
	FwdTmpBytes int64   `json:"fwd_tmp_bytes"` // o_F: temporary peak of the forward
	BwdTmpBytes int64   `json:"bwd_tmp_bytes"` // o_B: temporary peak of the backward
	ParamBytes  int64   `json:"param_bytes"`   // weights; unused by checkpointing planners

	// The exact memory model (ChainFormatV2; nil in version 1, read as the conservative
	// answer by InputSaved, OutputSaved and Recompute).
	SavesInput    *bool    `json:"saves_input,omitempty"`    // B needs a_{ℓ-1}
	SavesOutput   *bool    `json:"saves_output,omitempty"`   // B needs a_ℓ
	RecomputeTime *float64 `json:"recompute_time,omitempty"` // u_R: recomputation right before B
	// o_R: the recomputation's peak above what it leaves for B (its ā without an unsaved
	// output); unknown means a_ℓ (when not saved) + o_F, the whole forward's peak.
	RecomputeTmpBytes *int64        `json:"recompute_tmp_bytes,omitempty"`
	Options           []StageOption `json:"options,omitempty"` // operation-level options 1..
}

// Loss holds the costs of the loss stage L+1. Its output and saved sizes are 0 by the chain
// contract; whatever the loss keeps for its backward belongs in BwdTmpBytes.
type Loss struct {
	FwdTime     float64 `json:"fwd_time"`
	BwdTime     float64 `json:"bwd_time"`
	FwdTmpBytes int64   `json:"fwd_tmp_bytes"`
	BwdTmpBytes int64   `json:"bwd_tmp_bytes"`
}

// Len returns L, the number of stages without the loss.
func (c *Chain) Len() int { return len(c.Stages) }

// SumTime returns Σ(u_F+u_B) over all stages and the loss: the makespan of a schedule
// without any recomputation, a lower bound for every schedule.
func (c *Chain) SumTime() float64 {
	total := c.Loss.FwdTime + c.Loss.BwdTime
	for _, s := range c.Stages {
		total += s.FwdTime + s.BwdTime
	}
	return total
}

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

func checkTime(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN is not a time"
	case math.IsInf(v, 0):
		return "infinite time"
	case v < 0:
		return fmt.Sprintf("negative time %g", v)
	}
	return ""
}

// requiredStageFields are the stage fields a chain file must spell out; param_bytes and name
// are optional.
var requiredStageFields = []string{"fwd_time", "bwd_time", "out_bytes", "saved_bytes", "fwd_tmp_bytes", "bwd_tmp_bytes"}

// v2StageFields are the optional stage fields of version 2, checked apart from the numbers.
var v2StageFields = map[string]bool{"saves_input": true, "saves_output": true, "recompute_time": true,
	"recompute_tmp_bytes": true, "options": true}

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

// checkNumber returns what is wrong with a raw JSON value meant to be a non-negative number
// (an integer when integer is set), or "".
func checkNumber(v json.RawMessage, integer bool) string {
	var f float64
	if strings.TrimSpace(string(v)) == "null" {
		return "null is not a number"
	}
	if err := json.Unmarshal(v, &f); err != nil {
		return fmt.Sprintf("not a number: %s", truncate(string(v), 40))
	}
	if f < 0 {
		return fmt.Sprintf("negative value %s", string(v))
	}
	if integer {
		if f != math.Trunc(f) {
			return fmt.Sprintf("%s is not a whole number of bytes", string(v))
		}
		if f > math.MaxInt64/4 {
			return fmt.Sprintf("%s bytes is out of range", string(v))
		}
	}
	return ""
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// describeJSONError turns an encoding/json error into a message with line and column.
func describeJSONError(data []byte, err error) string {
	if bytes.HasPrefix(data, []byte("ARROW1")) || bytes.HasPrefix(data, []byte{0xff, 0xff, 0xff, 0xff}) {
		// The file given where JSON belongs is the other kind chainplan reads.
		return "the file is an Arrow file (a profile?), not JSON"
	}
	var off int64 = -1
	switch e := err.(type) {
	case *json.SyntaxError:
		off = e.Offset
	case *json.UnmarshalTypeError:
		off = e.Offset
		return fmt.Sprintf("field %q: %s is not a valid %s (line %d)", e.Field, e.Value, e.Type, lineOf(data, off))
	}
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return "the document is empty or truncated"
	}
	if off >= 0 {
		return fmt.Sprintf("malformed JSON at line %d: %v", lineOf(data, off), err)
	}
	return err.Error()
}

func lineOf(data []byte, off int64) int {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	return bytes.Count(data[:off], []byte("\n")) + 1
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

// MarshalIndent returns the chain as an indented chainplan.chain/v1 document, or v2 when a
// stage carries the exact memory model (FormatTag).
func (c *Chain) MarshalIndent() ([]byte, error) {
	out := *c
	out.Format = c.FormatTag()
	b, err := json.MarshalIndent(&out, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
