package pipeplan

import (
	"encoding/json"
	"fmt"

	"github.com/chainplan/chainplan"
)

// Format is the format tag of a pipeline plan (DESIGN.md, "Pipeline plan").
const Format = "chainplan.pipeline/v1"

// OpKind names an operation of a periodic pattern.
type OpKind string

// The four operations of a pattern (spec §3.4.1).
const (
	// F is the forward of a stage on its device.
	F OpKind = "F"
	// B is the backward of a stage on its device.
	B OpKind = "B"
	// CF sends the output of stage k to stage k+1, on the link between their devices.
	CF OpKind = "CF"
	// CB sends the gradient of stage k's output back from stage k+1, on the same link.
	CB OpKind = "CB"
)

// Valid reports whether k is one of the four operations.
func (k OpKind) Valid() bool { return k == F || k == B || k == CF || k == CB }

// Plan is a chainplan.pipeline/v1 document: a partition of the chain into stages on
// devices and a 1-periodic pattern, in the paper's shift convention (spec §1.4): mini-batch
// b runs an operation at Start + (b + Shift)·Period.
type Plan struct {
	Format          string          `json:"format"`
	Algo            string          `json:"algo"`
	GPUs            int             `json:"gpus"`
	MemoryBytes     int64           `json:"memory_bytes"`
	Bandwidth       float64         `json:"bandwidth"`
	WeightCopies    int             `json:"weight_copies"`
	ActivationModel ActivationModel `json:"activation_model"`
	// Period is T, the time between two mini-batches in the steady state.
	Period float64 `json:"period"`
	// Stages cover layers 1..L in order.
	Stages []Stage `json:"stages"`
	// Pattern has one entry per operation of one period: F and B of every stage, CF and
	// CB of every stage whose successor is on another device.
	Pattern []Op `json:"pattern"`
	// MemoryPerGPU is the peak memory of each device over the period (the validator's
	// time-resolved model, spec §3.4.3), in bytes; 0 for an idle device.
	MemoryPerGPU []int64 `json:"memory_per_gpu"`
	// Contiguous is true when every device holds at most one stage.
	Contiguous bool `json:"contiguous"`

	// The optional fields below are absent from documents that do not set them.

	// Chosen names, in the plan of an algorithm that compares several candidates (madpipe
	// computes its own plan and the best contiguous one), the candidate this plan is.
	Chosen string `json:"chosen,omitempty"`
	// PredictedPeriod is the period the partitioning step predicted before scheduling
	// (MadPipe's phase 1 estimate, PipeDream's DP value: the "dashed line" of spec §6.1).
	PredictedPeriod float64 `json:"predicted_period,omitempty"`
	// SolveMS is the planner's time in milliseconds.
	SolveMS float64 `json:"solve_ms,omitempty"`
	// Microbatches is the number of micro-batches per optimizer step the plan was made
	// for, when the caller gave one (the executor's, DESIGN.md "Python").
	Microbatches int `json:"microbatches,omitempty"`
	// Temporaries says whether memory_per_gpu counts the operations' transient memory
	// and the loss (docs/pipeline.md, "What a device holds"). Plans written since it
	// exists always carry it; a document without it predates it and counts neither.
	Temporaries bool `json:"temporaries"`
	// Headroom is the share of memory_bytes the plan leaves free: memory_per_gpu fits
	// memory_bytes·(1 − headroom).
	Headroom float64 `json:"headroom,omitempty"`
	// Checkpoint says that the planner could make stages recompute (Stage.Recompute).
	Checkpoint bool `json:"checkpoint,omitempty"`
	// SequentialTime is U(1,L), one device running the chain without pipelining: the
	// reference of the plan's speed-up (SequentialTime / Period).
	SequentialTime float64 `json:"sequential_time,omitempty"`
	// UnconstrainedPeriod is the period of the best contiguous plan without a memory
	// limit: UnconstrainedPeriod / Period says what the memory limit costs (1: nothing).
	UnconstrainedPeriod float64 `json:"unconstrained_period,omitempty"`
	// Fallback, when set, says that the planner could not compute the plan it was asked
	// for and returned a weaker one, and why (FallbackNoSolver).
	Fallback string `json:"fallback,omitempty"`
}

// FallbackNoSolver is Plan.Fallback when MadPipe's phase 1 found an allocation that only
// its scheduling MILP can schedule and no MILP solver was found: the plan is the best
// contiguous one, possibly slower than MadPipe's.
const FallbackNoSolver = "no-milp-solver"

// Speedup returns SequentialTime / Period, the plan's speed-up over one device running
// the chain (spec §1.4); 0 when the plan does not say.
func (p *Plan) Speedup() float64 {
	if p.SequentialTime <= 0 || p.Period <= 0 {
		return 0
	}
	return p.SequentialTime / p.Period
}

// MemoryCost returns UnconstrainedPeriod / Period: 1 when the memory limit costs nothing,
// 0.5 when the plan is twice as slow as the best contiguous plan without a limit (above 1
// when it beats that plan); 0 when the plan does not say.
func (p *Plan) MemoryCost() float64 {
	if p.UnconstrainedPeriod <= 0 || p.Period <= 0 {
		return 0
	}
	return p.UnconstrainedPeriod / p.Period
}

// Stage is layers First..Last (1-based, inclusive) on device GPU (0-based). A stage
// records its graph in its forward unless Recompute is set.
type Stage struct {
	First int `json:"first"`
	Last  int `json:"last"`
	GPU   int `json:"gpu"`
	// Recompute, when set, makes the stage keep only its input and recompute in its
	// backward (recompute.go).
	Recompute *Recompute `json:"recompute,omitempty"`
}

// Op is one operation of the pattern: Op of stage Stage (0-based index into Plan.Stages),
// starting at Start ∈ [0, Period) for Duration, with shift Shift.
type Op struct {
	Op       OpKind  `json:"op"`
	Stage    int     `json:"stage"`
	Start    float64 `json:"start"`
	Duration float64 `json:"duration"`
	Shift    int     `json:"shift"`
}

func (o Op) String() string {
	return fmt.Sprintf("%s%d@%.6g+%dT", o.Op, o.Stage, o.Start, o.Shift)
}

// MarshalIndent returns the plan as an indented chainplan.pipeline/v1 document ending in a
// newline; an empty Format is written as Format.
func (p *Plan) MarshalIndent() ([]byte, error) {
	out := *p
	if out.Format == "" {
		out.Format = Format
	}
	if out.Stages == nil {
		out.Stages = []Stage{}
	}
	if out.Pattern == nil {
		out.Pattern = []Op{}
	}
	if out.MemoryPerGPU == nil {
		out.MemoryPerGPU = []int64{}
	}
	b, err := json.MarshalIndent(&out, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode pipeline plan: %w", err)
	}
	return append(b, '\n'), nil
}

// Find returns the index in p.Pattern of operation kind of stage k, or −1.
func (p *Plan) Find(kind OpKind, k int) int {
	for i, o := range p.Pattern {
		if o.Op == kind && o.Stage == k {
			return i
		}
	}
	return -1
}

// StagesOn returns the indices of the stages device g holds, in chain order.
func (p *Plan) StagesOn(g int) []int {
	var ks []int
	for k, s := range p.Stages {
		if s.GPU == g {
			ks = append(ks, k)
		}
	}
	return ks
}

// IsContiguous reports whether every device holds at most one stage (spec §1.3).
func IsContiguous(stages []Stage) bool {
	seen := map[int]bool{}
	for _, s := range stages {
		if seen[s.GPU] {
			return false
		}
		seen[s.GPU] = true
	}
	return true
}

// String writes a stage as {first last gpu}, with its budget when it recomputes.
func (s Stage) String() string {
	if s.Recompute == nil {
		return fmt.Sprintf("{%d %d %d}", s.First, s.Last, s.GPU)
	}
	return fmt.Sprintf("{%d %d %d recompute %d B}", s.First, s.Last, s.GPU, s.Recompute.BudgetBytes)
}

// Recompute marks a stage that keeps only its input between its forward and its backward:
// when the gradient of its output arrives, it runs Sequence, a rotor sequence of its
// layers numbered from 1 (F_all, F_ck, F_none, B), which needs at most BudgetBytes above
// the stage input (the gradient it received included).
type Recompute struct {
	BudgetBytes int64          `json:"budget_bytes"`
	Sequence    []chainplan.Op `json:"sequence"`
}
