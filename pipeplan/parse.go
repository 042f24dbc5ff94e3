package pipeplan

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/chainplan/chainplan"
)

// PlanError reports a pipeline plan document that cannot be read; Field is the path of
// the bad value ("pattern[3].stage"). It wraps chainplan.ErrInvalidPlan.
type PlanError struct {
	Field string
	Msg   string
}

func (e *PlanError) Error() string {
	if e.Field == "" {
		return "invalid pipeline plan: " + e.Msg
	}
	return fmt.Sprintf("invalid pipeline plan: %s: %s", e.Field, e.Msg)
}

// Unwrap makes errors.Is(err, chainplan.ErrInvalidPlan) true.
func (e *PlanError) Unwrap() error { return chainplan.ErrInvalidPlan }

// Fields of the document: required, then optional.
var (
	planRequired = []string{"format", "algo", "gpus", "memory_bytes", "bandwidth", "weight_copies", "activation_model", "period", "stages", "pattern", "memory_per_gpu", "contiguous"}
	planOptional = []string{"chosen", "predicted_period", "solve_ms", "microbatches", "temporaries", "headroom",
		"checkpoint", "sequential_time", "unconstrained_period", "fallback"}
	stageRequired     = []string{"first", "last", "gpu"}
	stageOptional     = []string{"recompute"}
	recomputeRequired = []string{"budget_bytes", "sequence"}
	stepRequired      = []string{"op", "stage"}
	opRequired        = []string{"op", "stage", "start", "duration", "shift"}
)

// Parse decodes a chainplan.pipeline/v1 document strictly: every field of DESIGN.md is
// required and typed (whole numbers for counts and bytes, finite numbers for times),
// unknown fields are refused, and each value is checked on its own (positive period and
// bandwidth, non-negative bytes and times, known operations). Errors are *PlanError
// naming the field. Whether the plan fits a chain is Validate's business.
func Parse(data []byte) (*Plan, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, &PlanError{Msg: fmt.Sprintf("not a JSON object: %v", err)}
	}
	if top == nil {
		return nil, &PlanError{Msg: "not a JSON object"}
	}
	r := reader{path: ""}
	// The tag first: a document of another version is refused by its tag, not for a field
	// this version does not know. A tag that is missing or no string is known's and str's.
	var tag string
	if v := top["format"]; !isNull(v) && json.Unmarshal(v, &tag) == nil {
		if err := chainplan.CheckFormat(tag, chainplan.ErrInvalidPlan, Format); err != nil {
			return nil, err
		}
	}
	if err := r.known(top, planRequired, planOptional); err != nil {
		return nil, err
	}
	p := &Plan{}
	var err error
	var am string
	steps := []func() error{
		func() error { p.Format, err = r.str(top, "format"); return err },
		func() error { p.Algo, err = r.str(top, "algo"); return err },
		func() error { p.GPUs, err = r.integer(top, "gpus", 1, math.MaxInt32); return err },
		func() error { p.MemoryBytes, err = r.bytes(top, "memory_bytes"); return err },
		func() error { p.Bandwidth, err = r.number(top, "bandwidth", true); return err },
		func() error { p.WeightCopies, err = r.integer(top, "weight_copies", 1, maxWeightCopies); return err },
		func() error {
			if am, err = r.str(top, "activation_model"); err != nil {
				return err
			}
			p.ActivationModel = ActivationModel(am)
			if p.ActivationModel != ActivationsSaved && p.ActivationModel != ActivationsInput {
				return r.fail("activation_model", "want %q or %q (got %q)", ActivationsSaved, ActivationsInput, am)
			}
			return nil
		},
		func() error { p.Period, err = r.number(top, "period", true); return err },
		func() error { p.Stages, err = r.stages(top); return err },
		func() error { p.Pattern, err = r.pattern(top); return err },
		func() error { p.MemoryPerGPU, err = r.memory(top); return err },
		func() error { return r.boolean(top, "contiguous", &p.Contiguous) },
		func() error { return r.optional(top, p) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// ReadPlan reads and parses a pipeline plan file.
func ReadPlan(path string) (*Plan, error) {
	data, err := chainplan.ReadInput(path, "a pipeline plan ("+Format+" JSON)")
	if err != nil {
		return nil, err
	}
	p, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("read pipeline plan %s: %w", path, err)
	}
	return p, nil
}

// IsPipelinePlan reports whether data is a JSON object whose format names a pipeline plan
// (chainplan.pipeline/vN, whatever N: Parse refuses a version it does not read by name),
// so that a caller holding a plan file of unknown family knows which parser to use.
func IsPipelinePlan(data []byte) bool {
	var head struct {
		Format string `json:"format"`
	}
	return json.Unmarshal(data, &head) == nil && chainplan.SameKind(head.Format, Format)
}

func (r reader) stages(top map[string]json.RawMessage) ([]Stage, error) {
	items, err := r.objects(top, "stages")
	if err != nil {
		return nil, err
	}
	out := make([]Stage, len(items))
	for i, it := range items {
		sr := reader{path: fmt.Sprintf("stages[%d]", i)}
		if err := sr.known(it, stageRequired, stageOptional); err != nil {
			return nil, err
		}
		s := &out[i]
		if s.First, err = sr.integer(it, "first", 1, math.MaxInt32); err != nil {
			return nil, err
		}
		if s.Last, err = sr.integer(it, "last", 1, math.MaxInt32); err != nil {
			return nil, err
		}
		if s.GPU, err = sr.integer(it, "gpu", 0, math.MaxInt32); err != nil {
			return nil, err
		}
		if _, ok := it["recompute"]; ok {
			if s.Recompute, err = sr.recompute(it); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// recompute reads a stage's recompute object: its budget and its rotor sequence.
func (r reader) recompute(stage map[string]json.RawMessage) (*Recompute, error) {
	var obj map[string]json.RawMessage
	if v := stage["recompute"]; isNull(v) || json.Unmarshal(v, &obj) != nil || obj == nil {
		return nil, r.fail("recompute", "want an object {budget_bytes, sequence} (got %s)", short(stage["recompute"]))
	}
	rr := reader{path: r.at("recompute")}
	if err := rr.known(obj, recomputeRequired, nil); err != nil {
		return nil, err
	}
	rc := &Recompute{}
	var err error
	if rc.BudgetBytes, err = rr.bytes(obj, "budget_bytes"); err != nil {
		return nil, err
	}
	items, err := rr.objects(obj, "sequence")
	if err != nil {
		return nil, err
	}
	for i, it := range items {
		or := reader{path: rr.at(fmt.Sprintf("sequence[%d]", i))}
		if err := or.known(it, stepRequired, nil); err != nil {
			return nil, err
		}
		kind, err := or.str(it, "op")
		if err != nil {
			return nil, err
		}
		switch k := chainplan.OpKind(kind); k {
		case chainplan.FAll, chainplan.FCk, chainplan.FNone, chainplan.B:
		default:
			return nil, or.fail("op", "want F_all, F_ck, F_none or B (got %q)", kind)
		}
		st, err := or.integer(it, "stage", 1, math.MaxInt32)
		if err != nil {
			return nil, err
		}
		rc.Sequence = append(rc.Sequence, chainplan.Op{Kind: chainplan.OpKind(kind), Stage: st})
	}
	return rc, nil
}

func (r reader) pattern(top map[string]json.RawMessage) ([]Op, error) {
	items, err := r.objects(top, "pattern")
	if err != nil {
		return nil, err
	}
	out := make([]Op, len(items))
	for i, it := range items {
		or := reader{path: fmt.Sprintf("pattern[%d]", i)}
		if err := or.known(it, opRequired, nil); err != nil {
			return nil, err
		}
		o := &out[i]
		kind, err := or.str(it, "op")
		if err != nil {
			return nil, err
		}
		if o.Op = OpKind(kind); !o.Op.Valid() {
			return nil, or.fail("op", "want F, B, CF or CB (got %q)", kind)
		}
		if o.Stage, err = or.integer(it, "stage", 0, math.MaxInt32); err != nil {
			return nil, err
		}
		if o.Start, err = or.number(it, "start", false); err != nil {
			return nil, err
		}
		if o.Duration, err = or.number(it, "duration", false); err != nil {
			return nil, err
		}
		if o.Shift, err = or.integer(it, "shift", math.MinInt32, math.MaxInt32); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (r reader) memory(top map[string]json.RawMessage) ([]int64, error) {
	var raw []json.RawMessage
	if v := top["memory_per_gpu"]; isNull(v) || json.Unmarshal(v, &raw) != nil {
		return nil, r.fail("memory_per_gpu", "want an array of byte counts (got %s)", short(top["memory_per_gpu"]))
	}
	out := make([]int64, len(raw))
	for i, v := range raw {
		b, err := r.bytes(map[string]json.RawMessage{"x": v}, "x")
		if err != nil {
			return nil, &PlanError{Field: fmt.Sprintf("memory_per_gpu[%d]", i), Msg: err.(*PlanError).Msg}
		}
		out[i] = b
	}
	return out, nil
}

func (r reader) optional(top map[string]json.RawMessage, p *Plan) error {
	var err error
	if _, ok := top["chosen"]; ok {
		if p.Chosen, err = r.str(top, "chosen"); err != nil {
			return err
		}
	}
	if _, ok := top["predicted_period"]; ok {
		if p.PredictedPeriod, err = r.number(top, "predicted_period", false); err != nil {
			return err
		}
	}
	if _, ok := top["solve_ms"]; ok {
		if p.SolveMS, err = r.number(top, "solve_ms", false); err != nil {
			return err
		}
	}
	if _, ok := top["microbatches"]; ok {
		if p.Microbatches, err = r.integer(top, "microbatches", 1, math.MaxInt32); err != nil {
			return err
		}
	}
	for _, b := range []struct {
		field string
		out   *bool
	}{{"temporaries", &p.Temporaries}, {"checkpoint", &p.Checkpoint}} {
		if _, ok := top[b.field]; ok {
			if err := r.boolean(top, b.field, b.out); err != nil {
				return err
			}
		}
	}
	for _, f := range []struct {
		field string
		out   *float64
	}{{"headroom", &p.Headroom}, {"sequential_time", &p.SequentialTime}, {"unconstrained_period", &p.UnconstrainedPeriod}} {
		if _, ok := top[f.field]; ok {
			if *f.out, err = r.number(top, f.field, false); err != nil {
				return err
			}
		}
	}
	if p.Headroom >= 1 {
		return r.fail("headroom", "want a share of the memory in [0, 1) (got %v)", p.Headroom)
	}
	if _, ok := top["fallback"]; ok {
		if p.Fallback, err = r.str(top, "fallback"); err != nil {
			return err
		}
	}
	return nil
}
