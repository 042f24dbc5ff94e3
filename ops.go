package chainplan

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// The operations every sequence is made of (OpKind, Op) and the options a sequence runs
// (StageChoice): what the plan document (schedule.go), its multichain and offload parts,
// and the exact memory model's choices (exact.go) all build on.

// OpKind names an operation of a checkpointing schedule (rotor spec §2.1).
type OpKind string

// The four operations of the rematerialization model.
const (
	// FAll runs a forward recording the autograd graph: keeps its input, stores ā.
	FAll OpKind = "F_all"
	// FCk runs a forward without a graph: keeps its input, stores a.
	FCk OpKind = "F_ck"
	// FNone runs a forward without a graph and frees its input: stores a.
	FNone OpKind = "F_none"
	// B runs the backward of a stage whose ā is stored.
	B OpKind = "B"
	// FreeGrad drops the gradient of a tower's input once the tower's backward is done
	// (D̄ of specs/multichain.md Table 1.1): only in multichain plans, for the branches
	// whose input gradient is not kept.
	FreeGrad OpKind = "free_grad"
)

// Valid reports whether k is one of the four operations of a chain's sequence.
func (k OpKind) Valid() bool { return k == FAll || k == FCk || k == FNone || k == B }

// Op is one operation of a sequence. Stage is 1-based; the loss is stage L+1. Option, on
// an F_all, is the stage's operation-level option (chainplan.chain/v2, StageOption): 1..
// keeps only what that option keeps and recomputes the rest right before the stage's
// backward; 0, the default, keeps everything.
//
// In a multichain plan (Plan.Multichain) every operation also names its Branch, 1..K, and
// Stage counts within the branch; the joint loss is branch 0, stage 0, and FreeGrad has
// stage 0 (docs/formats-schedule.md). Multichain plans choose no options.
type Op struct {
	Kind   OpKind `json:"op"`
	Branch int    `json:"branch,omitempty"`
	Stage  int    `json:"stage"`
	Option int    `json:"option,omitempty"`
}

func (o Op) String() string {
	switch {
	case o.Kind == FreeGrad:
		return fmt.Sprintf("%s %d", o.Kind, o.Branch)
	case o.Branch > 0:
		return fmt.Sprintf("%s %d.%d", o.Kind, o.Branch, o.Stage)
	case o.Stage == 0:
		return fmt.Sprintf("%s loss", o.Kind)
	case o.Option > 0:
		return fmt.Sprintf("%s %d/%d", o.Kind, o.Stage, o.Option)
	}
	return fmt.Sprintf("%s %d", o.Kind, o.Stage)
}

// StageChoice is an operation-level option a plan runs: the stage, its option (Op.Option)
// and the positions of the nodes of the stage's captured graph that the option keeps
// (StageOption.Keep), so that an executor needs nothing but the plan; Form names the
// computation a form option runs instead of the stage's own (StageOption.Form).
type StageChoice struct {
	Stage  int    `json:"stage"`
	Option int    `json:"option"`
	Keep   []int  `json:"keep"`
	Form   string `json:"form,omitempty"`
}

// MarshalJSON writes {"op", "stage"} for an operation of a chain's sequence (with "option"
// when it runs one) and {"op", "branch", "stage"} for one of a multichain sequence, where
// the joint loss (branch 0, stage 0) carries its branch too.
func (o Op) MarshalJSON() ([]byte, error) {
	kind, err := json.Marshal(string(o.Kind))
	if err != nil {
		return nil, err
	}
	b := append([]byte(`{"op":`), kind...)
	if o.Branch != 0 || o.Stage == 0 {
		b = append(append(b, `,"branch":`...), strconv.Itoa(o.Branch)...)
	}
	b = append(append(b, `,"stage":`...), strconv.Itoa(o.Stage)...)
	if o.Option != 0 {
		b = append(append(b, `,"option":`...), strconv.Itoa(o.Option)...)
	}
	return append(b, '}'), nil
}

// FormatSequence writes a sequence compactly, e.g. "F_ck 1, F_none 2, F_all 3, B 3".
func FormatSequence(seq []Op) string {
	parts := make([]string, len(seq))
	for i, o := range seq {
		parts[i] = o.String()
	}
	return strings.Join(parts, ", ")
}

// StoreAllSequence returns PyTorch's default schedule for a chain of l stages plus the loss:
// F_all 1..l+1, then B l+1..1. It recomputes nothing and its makespan is the lower bound
// Σ(u_F+u_B) of every schedule.
func StoreAllSequence(l int) []Op {
	seq := make([]Op, 0, 2*(l+1))
	for k := 1; k <= l+1; k++ {
		seq = append(seq, Op{Kind: FAll, Stage: k})
	}
	for k := l + 1; k >= 1; k-- {
		seq = append(seq, Op{Kind: B, Stage: k})
	}
	return seq
}
