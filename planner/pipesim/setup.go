package pipesim

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/pipeline"
)

// Setup is what a simulation runs on: the pipeline model of planner/pipeline (the chain,
// the devices, the bandwidth, the weight copies and the activation model), the stages and
// their devices, and how transfers and recomputation are modelled. Build it with NewSetup
// (stages given, one per device) or PlanSetup (a plan to replay); it is immutable.
type Setup struct {
	pr     *pipeline.Problem
	stages []pipeplan.Stage
	plan   *pipeplan.Plan // the plan Periodic replays; nil for the other schedules
	links  bool
	alphaS float64
	ckpt   []bool
	bounds []BoundaryLink // per boundary, overriding the problem's β and alphaS; nil: none
}

// BoundaryLink is the link of one stage boundary (both directions, one link each): its
// bandwidth in bytes per second and its latency in seconds.
type BoundaryLink struct {
	Bandwidth float64
	LatencyS  float64
}

// SetupOptions say how transfers and recomputation are modelled.
type SetupOptions struct {
	// Links puts every transfer on a link resource, one per boundary and direction, each
	// carrying one transfer at a time while the stages compute (spec §5.4, AMP's §6.1
	// assumption); a transfer lasts AlphaS + a/β, a the boundary's activation (its
	// gradient has the same size) and β the problem's bandwidth. False: transfers take no
	// time and no link is modelled (the papers' figures).
	Links bool
	// AlphaS is the latency α of one transfer, in the chain's time unit (seconds), ≥ 0;
	// only with Links.
	AlphaS float64
	// Checkpointed lists the stages (0-based) that keep only their input during the
	// forward and recompute the rest right before their backward: the backward then lasts
	// the forward's time longer and the stage stores a_{first−1} per micro-batch in flight
	// instead of ā, plus ā of the micro-batches being back-propagated.
	Checkpointed []int
	// Boundaries, when given (one per boundary, len(stages) − 1, with Links), gives each
	// boundary its own link: a transfer across boundary k (after stage k) lasts
	// Boundaries[k].LatencyS + a/Boundaries[k].Bandwidth instead of AlphaS + a/β (a 3-D
	// search's stages sit on links of different speeds).
	Boundaries []BoundaryLink
}

// NewSetup returns the setup of stages on pr: they must cover layers 1..L in order, each
// on its own device of pr (every schedule but Periodic gives each stage a compute
// resource of its own). Errors: an *OptionError naming the stage or option.
func NewSetup(pr *pipeline.Problem, stages []pipeplan.Stage, o SetupOptions) (*Setup, error) {
	if pr == nil {
		return nil, optionErr("stages", "no problem")
	}
	if err := checkPartition(pr, stages); err != nil {
		return nil, err
	}
	seen := map[int]int{}
	for k, s := range stages {
		if j, ok := seen[s.GPU]; ok {
			return nil, optionErr("stages", "stages %d and %d are both on device %d: the schedules give every stage a device of its own (a plan with shared devices replays with schedule periodic)", j, k, s.GPU)
		}
		seen[s.GPU] = k
	}
	if a := o.AlphaS; math.IsNaN(a) || math.IsInf(a, 0) || a < 0 {
		return nil, optionErr("alpha", "want a finite latency ≥ 0 in seconds (got %v)", a)
	}
	if o.AlphaS > 0 && !o.Links {
		return nil, optionErr("alpha", "a latency needs the link model (a bandwidth)")
	}
	if len(o.Boundaries) > 0 {
		if !o.Links {
			return nil, optionErr("boundaries", "per-boundary links need the link model (Links)")
		}
		if len(o.Boundaries) != len(stages)-1 {
			return nil, optionErr("boundaries", "%d links for %d boundaries (one per pair of consecutive stages)", len(o.Boundaries), len(stages)-1)
		}
		for k, l := range o.Boundaries {
			if b := l.Bandwidth; math.IsNaN(b) || math.IsInf(b, 0) || b <= 0 {
				return nil, optionErr("boundaries", "boundary %d: want a positive, finite bandwidth (got %v)", k, b)
			}
			if a := l.LatencyS; math.IsNaN(a) || math.IsInf(a, 0) || a < 0 {
				return nil, optionErr("boundaries", "boundary %d: want a finite latency ≥ 0 in seconds (got %v)", k, a)
			}
		}
	}
	ckpt := make([]bool, len(stages))
	for _, k := range o.Checkpointed {
		if k < 0 || k >= len(stages) {
			return nil, optionErr("checkpoint", "stage %d is not in 0..%d", k, len(stages)-1)
		}
		if ckpt[k] {
			return nil, optionErr("checkpoint", "stage %d is listed twice", k)
		}
		ckpt[k] = true
	}
	return &Setup{pr: pr, stages: slices.Clone(stages), links: o.Links, alphaS: o.AlphaS, ckpt: ckpt,
		bounds: slices.Clone(o.Boundaries)}, nil
}

// PlanSetup returns the setup that replays plan p on pr, the problem the plan was made for
// (pipeline.ProblemOf): its stages and devices, its links (one per device pair, shared by
// both directions and by every boundary between the pair, as in the plan's model), no
// latency and no recomputation. The plan's durations are not read: every operation lasts
// what the model says (Problem.Cost, Transfer), so that a plan whose numbers disagree with
// the model simulates to another period. Errors wrap chainplan.ErrInvalidPlan and name the
// field of a plan whose structure does not fit pr.
func PlanSetup(pr *pipeline.Problem, p *pipeplan.Plan) (*Setup, error) {
	bad := func(field, format string, args ...any) error {
		return &pipeplan.PlanError{Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	if pr == nil || p == nil {
		return nil, bad("", "no plan")
	}
	if p.GPUs != pr.Options().GPUs {
		return nil, bad("gpus", "the plan is for %d devices, the problem has %d", p.GPUs, pr.Options().GPUs)
	}
	if t := p.Period; math.IsNaN(t) || math.IsInf(t, 0) || t <= 0 {
		return nil, bad("period", "want a positive, finite time (got %v)", t)
	}
	if err := checkPartition(pr, p.Stages); err != nil {
		msg := err.Error()
		if oe := (*OptionError)(nil); errors.As(err, &oe) {
			msg = oe.Msg
		}
		return nil, bad("stages", "%s", msg)
	}
	n := len(p.Stages)
	seen := map[[2]int]int{}
	for i, o := range p.Pattern {
		f := fmt.Sprintf("pattern[%d]", i)
		switch {
		case !o.Op.Valid():
			return nil, bad(f+".op", "want F, B, CF or CB (got %q)", o.Op)
		case o.Stage < 0 || o.Stage >= n:
			return nil, bad(f+".stage", "want a stage in 0..%d (got %d)", n-1, o.Stage)
		case math.IsNaN(o.Start) || math.IsInf(o.Start, 0):
			return nil, bad(f+".start", "want a finite time (got %v)", o.Start)
		case (o.Op == pipeplan.CF || o.Op == pipeplan.CB) && !pipeplan.Crosses(p.Stages, o.Stage):
			return nil, bad(f, "%s of stage %d, whose output does not leave its device", o.Op, o.Stage)
		}
		key := [2]int{opIndex(o.Op), o.Stage}
		if j, dup := seen[key]; dup {
			return nil, bad(f, "a second %s of stage %d (the first is pattern[%d])", o.Op, o.Stage, j)
		}
		seen[key] = i
	}
	for k := range n {
		kinds := []pipeplan.OpKind{pipeplan.F, pipeplan.B}
		if pipeplan.Crosses(p.Stages, k) {
			kinds = append(kinds, pipeplan.CF, pipeplan.CB)
		}
		for _, kind := range kinds {
			if _, ok := seen[[2]int{opIndex(kind), k}]; !ok {
				return nil, bad("pattern", "no %s of stage %d", kind, k)
			}
		}
	}
	return &Setup{pr: pr, stages: slices.Clone(p.Stages), plan: p, links: true, ckpt: make([]bool, n)}, nil
}

func opIndex(k pipeplan.OpKind) int {
	return slices.Index([]pipeplan.OpKind{pipeplan.F, pipeplan.B, pipeplan.CF, pipeplan.CB}, k)
}

// checkPartition refuses stages that do not cover pr's layers in order on its devices.
func checkPartition(pr *pipeline.Problem, stages []pipeplan.Stage) error {
	if len(stages) == 0 {
		return optionErr("stages", "no stages")
	}
	next := 1
	for k, s := range stages {
		switch {
		case s.First != next:
			return optionErr("stages", "stage %d starts at layer %d, want %d (the layer after the previous stage)", k, s.First, next)
		case s.Last < s.First:
			return optionErr("stages", "stage %d ends at layer %d, before its first layer %d", k, s.Last, s.First)
		case s.Last > pr.L():
			return optionErr("stages", "stage %d ends at layer %d, the chain has %d layers", k, s.Last, pr.L())
		case s.GPU < 0 || s.GPU >= pr.Options().GPUs:
			return optionErr("stages", "stage %d is on device %d, want one of 0..%d", k, s.GPU, pr.Options().GPUs-1)
		}
		next = s.Last + 1
	}
	if next != pr.L()+1 {
		return optionErr("stages", "the stages end at layer %d, the chain has %d layers", next-1, pr.L())
	}
	return nil
}

// Problem returns the pipeline model the setup simulates.
func (s *Setup) Problem() *pipeline.Problem { return s.pr }

// Stages returns the stages and their devices.
func (s *Setup) Stages() []pipeplan.Stage { return slices.Clone(s.stages) }

// Plan returns the plan PlanSetup replays, or nil.
func (s *Setup) Plan() *pipeplan.Plan { return s.plan }

// ParseStages reads a stage specification for a chain of layers layers: a count ("4": the
// caller partitions the chain into that many stages; count is set and stages nil), or
// comma-separated 1-based inclusive layer ranges ("1-4,5-9,10-12"; a single layer is "5")
// covering the chain in order, stage k on device k. Errors are an *OptionError naming the
// range at fault.
func ParseStages(spec string, layers int) (stages []pipeplan.Stage, count int, err error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, 0, optionErr("stages", "empty: give a stage count (4) or layer ranges (1-4,5-9,10-12)")
	}
	if n, err := strconv.Atoi(spec); err == nil {
		if n < 1 || n > layers {
			return nil, 0, optionErr("stages", "%d stages: want 1..%d, the chain's layers", n, layers)
		}
		return nil, n, nil
	}
	next := 1
	for k, text := range strings.Split(spec, ",") {
		text = strings.TrimSpace(text)
		lo, hi, isRange := strings.Cut(text, "-")
		a, errA := strconv.Atoi(strings.TrimSpace(lo))
		b, errB := a, error(nil)
		if isRange {
			b, errB = strconv.Atoi(strings.TrimSpace(hi))
		}
		switch {
		case errA != nil || errB != nil:
			return nil, 0, optionErr("stages", "%q is not a layer range such as 5-9 (stage %d)", text, k)
		case a != next:
			return nil, 0, optionErr("stages", "stage %d (%s) starts at layer %d, want %d: the ranges must cover layers 1..%d in order", k, text, a, next, layers)
		case b < a:
			return nil, 0, optionErr("stages", "stage %d (%s) ends before it starts", k, text)
		case b > layers:
			return nil, 0, optionErr("stages", "stage %d (%s) ends at layer %d, the chain has %d layers", k, text, b, layers)
		}
		stages = append(stages, pipeplan.Stage{First: a, Last: b, GPU: k})
		next = b + 1
	}
	if next != layers+1 {
		return nil, 0, optionErr("stages", "the ranges end at layer %d, the chain has %d layers: they must cover the whole chain", next-1, layers)
	}
	return stages, 0, nil
}
