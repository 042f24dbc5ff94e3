package chainplan

import (
	"encoding/json"
	"fmt"
)

// ChainFormat is the format tag of version 1 of the chain file (ChainFormatV2 adds the
// exact memory model).
const ChainFormat = "chainplan.chain/v1"

// ChainFormatV2 is the format tag of version 2 of the chain file: version 1 plus the exact
// memory model of each stage (which of its saved tensors are its input or its output, the
// time of the recomputation that regenerates only what the backward reads) and its
// operation-level options (docs/formats.md, "Chains, version 2"). A version 1 chain still
// loads: its stages are read as saving both their input and their output, and as
// recomputing their whole forward, which is what every planner assumed before version 2.
const ChainFormatV2 = "chainplan.chain/v2"

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
	// ReplayBytes is what one random-number state of the stage costs in the memory planned
	// (the CPU generator's, 5056 B, on the CPU; 0 on a GPU, whose states are host tensors):
	// an executor keeps one, from the stage's first forward to the end of
	// the step, for a stage that draws random numbers (dropout) and that the plan runs
	// forward more than once or with an option, to replay its draws. 0 (absent): the stage
	// draws none. Counted once per plan, apart from the stage's overheads
	// (Chain.ReplayStateBytes).
	ReplayBytes int64 `json:"replay_bytes,omitempty"`
}

// Loss holds the costs of the loss stage L+1. Its output and saved sizes are 0 by the chain
// contract; whatever the loss keeps for its backward belongs in BwdTmpBytes.
type Loss struct {
	FwdTime     float64 `json:"fwd_time"`
	BwdTime     float64 `json:"bwd_time"`
	FwdTmpBytes int64   `json:"fwd_tmp_bytes"`
	BwdTmpBytes int64   `json:"bwd_tmp_bytes"`
}

// StageOption is one operation-level option of a stage: which values of the stage's
// forward the first forward keeps (Keep, positions of nodes in the stage's captured graph),
// what that costs in memory (SavedBytes, ā of the option, output included, and
// FwdTmpBytes, its forward's temporary peak on top of it) and the time of the
// recomputation that rebuilds the rest right before the stage's backward (RecomputeTime).
// Option 0 of every stage, implicit, keeps everything: ā, o_F and no recomputation.
//
// A form option (Form set) is another computation of the whole stage, the same function of
// the same inputs (a language model's head unfused from its loss: docs/executors.md): its
// first forward keeps everything its form saves (SavedBytes, which its backward holds: it
// recomputes nothing), and its forward and backward take their own times and backward
// temporaries (FwdTime, BwdTime, BwdTmpBytes, which a form option must have; absent on
// other options, which run the stage's).
type StageOption struct {
	SavedBytes    int64    `json:"saved_bytes"`
	FwdTmpBytes   int64    `json:"fwd_tmp_bytes"`
	RecomputeTime float64  `json:"recompute_time"`
	Keep          []int    `json:"keep"`
	Form          string   `json:"form,omitempty"`
	FwdTime       *float64 `json:"fwd_time,omitempty"`
	BwdTime       *float64 `json:"bwd_time,omitempty"`
	BwdTmpBytes   *int64   `json:"bwd_tmp_bytes,omitempty"`
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

// FormatTag returns the format a document of c has: version 2 when a stage carries a field
// of the exact memory model, else version 1.
func (c *Chain) FormatTag() string {
	for i := range c.Stages {
		if c.Stages[i].exact() {
			return ChainFormatV2
		}
	}
	return ChainFormat
}

func (s *Stage) exact() bool {
	return s.SavesInput != nil || s.SavesOutput != nil || s.RecomputeTime != nil || s.RecomputeTmpBytes != nil ||
		len(s.Options) > 0 || s.ReplayBytes != 0
}

// ChainError describes one invalid value of a chain. Stage is 1-based; 0 means the
// chain-level fields and Loss the loss stage.
type ChainError struct {
	Branch int    // 1..K for a branch of a multichain bundle, 0 otherwise
	Stage  int    // 1..L for stages, 0 for chain-level fields, -1 for the loss
	Name   string // the stage's name, if any
	Field  string // the JSON field name
	Msg    string // what is wrong with the value
}

// LossStage is the Stage value ChainError uses for the loss.
const LossStage = -1

func (e *ChainError) Error() string {
	where := "chain"
	switch {
	case e.Stage == LossStage:
		where = "loss"
	case e.Stage > 0 && e.Name != "":
		where = fmt.Sprintf("stage %d (%q)", e.Stage, e.Name)
	case e.Stage > 0:
		where = fmt.Sprintf("stage %d", e.Stage)
	}
	switch {
	case e.Branch > 0 && e.Stage == 0:
		where = fmt.Sprintf("branch %d", e.Branch)
	case e.Branch > 0:
		where = fmt.Sprintf("branch %d: %s", e.Branch, where)
	}
	if e.Field == "" {
		return fmt.Sprintf("invalid chain: %s: %s", where, e.Msg)
	}
	return fmt.Sprintf("invalid chain: %s: field %q: %s", where, e.Field, e.Msg)
}

// Unwrap makes errors.Is(err, ErrInvalidChain) true.
func (e *ChainError) Unwrap() error { return ErrInvalidChain }
