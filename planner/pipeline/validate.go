package pipeline

import (
	"fmt"
	"math"
	"strings"

	"github.com/chainplan/chainplan/pipeplan"

	"github.com/chainplan/chainplan"
)

// tolerance is the relative tolerance of the validator's time comparisons, as a fraction of
// the period: durations, dependencies and overlaps within tolerance·T are accepted, since
// pattern times are sums of measured floats.
const tolerance = 1e-9

// Issue is one problem the validator found. Field locates it in the document
// ("pattern[3]", "stages[1].gpu") or names the resource ("gpu 1", "link 0-2").
type Issue struct {
	Field string `json:"field"`
	Msg   string `json:"msg"`
}

func (i Issue) String() string { return i.Field + ": " + i.Msg }

// Report is what Validate measures on a plan. The per-stage and per-device slices are
// filled only when the plan's structure is sound (no structural issue).
type Report struct {
	// Valid is true when Issues is empty.
	Valid  bool    `json:"valid"`
	Issues []Issue `json:"issues"`
	// Period is the plan's T; LoadBound is T_load of spec §1.4 for its allocation (the
	// most loaded device or link), a lower bound of any period; Speedup is U(1,L)/T.
	Period    float64 `json:"period"`
	LoadBound float64 `json:"load_bound"`
	Speedup   float64 `json:"speedup"`
	// NCA is each stage's number of concurrent activations (spec §3.4.3).
	NCA []int `json:"nca"`
	// Static is each device's weights (C copies) and communication buffers.
	Static []int64 `json:"static_bytes"`
	// MemoryNCA is Static plus Σ NCA_k·ā_k over the device's stages: the model of the DP
	// and of 1F1B*, an upper bound of MemoryPeak.
	MemoryNCA []int64 `json:"memory_nca_bytes"`
	// MemoryPeak is Static plus the peak over the period of the activations stored: the
	// time-resolved model, which the memory limit is checked against.
	MemoryPeak []int64 `json:"memory_peak_bytes"`
}

// Validate checks plan p against the model of pr independently of every planner (spec
// §3.4): the document's structure and its agreement with pr's options; each operation's
// duration from the model; the dependencies of every mini-batch under the shift convention;
// exclusivity on each device and each link (circular intervals over one period, durations
// summing to at most T); the memory of each device, time-resolved, against pr's memory
// limit, and the plan's memory_per_gpu against it; and the period against the load bound.
// It collects every issue rather than stopping at the first, except that a structural
// issue stops it before the schedule checks, which need a sound structure.
//
// Memory is checked against pr.Options().MemoryBytes, not the plan's memory_bytes, so that
// a plan can be checked against another limit.
func Validate(pr *Problem, p *pipeplan.Plan) *Report {
	v := &validator{pr: pr, p: p, rep: &Report{Period: p.Period}}
	v.structure()
	if len(v.rep.Issues) == 0 {
		v.durations()
		v.dependencies()
		v.exclusivity()
		v.memory()
		v.load()
		if tw := pr.TotalWork(); p.Period > 0 {
			v.rep.Speedup = tw / p.Period
		}
	}
	v.rep.Valid = len(v.rep.Issues) == 0
	if v.rep.Issues == nil {
		v.rep.Issues = []Issue{}
	}
	return v.rep
}

// Check validates p and returns nil, or an error wrapping chainplan.ErrInvalidPlan that
// lists the first issues.
func Check(pr *Problem, p *pipeplan.Plan) error {
	rep := Validate(pr, p)
	if rep.Valid {
		return nil
	}
	const shown = 5
	var msgs []string
	for i, is := range rep.Issues {
		if i == shown {
			msgs = append(msgs, fmt.Sprintf("and %d more", len(rep.Issues)-shown))
			break
		}
		msgs = append(msgs, is.String())
	}
	return fmt.Errorf("%w: %s plan: %s", chainplan.ErrInvalidPlan, p.Algo, strings.Join(msgs, "; "))
}

type validator struct {
	pr  *Problem
	p   *pipeplan.Plan
	rep *Report
	eps float64 // tolerance·T
	// op[kind][k] is the index in p.Pattern of operation kind of stage k, or −1.
	op map[pipeplan.OpKind][]int
}

func (v *validator) issue(field, format string, args ...any) {
	v.rep.Issues = append(v.rep.Issues, Issue{field, fmt.Sprintf(format, args...)})
}

// structure checks the document against the contract and pr's options.
func (v *validator) structure() {
	p, o := v.p, v.pr.Options()
	if p.Format != pipeplan.Format {
		v.issue("format", "want %q (got %q)", pipeplan.Format, p.Format)
	}
	if p.GPUs != o.GPUs {
		v.issue("gpus", "the plan is for %d devices, the problem has %d", p.GPUs, o.GPUs)
	}
	if p.Bandwidth != o.Bandwidth {
		v.issue("bandwidth", "the plan assumes %g bytes/s, the problem %g", p.Bandwidth, o.Bandwidth)
	}
	if p.WeightCopies != o.WeightCopies {
		v.issue("weight_copies", "the plan counts %d copies, the problem %d", p.WeightCopies, o.WeightCopies)
	}
	if p.ActivationModel != o.ActivationModel {
		v.issue("activation_model", "the plan counts %q, the problem %q", p.ActivationModel, o.ActivationModel)
	}
	if p.Temporaries == o.NoTemporaries {
		v.issue("temporaries", "the plan says %v, the problem %v", p.Temporaries, !o.NoTemporaries)
	}
	if p.Headroom != o.Headroom {
		v.issue("headroom", "the plan leaves %v free, the problem %v", p.Headroom, o.Headroom)
	}
	if t := p.Period; math.IsNaN(t) || math.IsInf(t, 0) || t <= 0 {
		v.issue("period", "want a positive, finite time (got %v)", t)
		return
	}
	v.eps = tolerance * p.Period
	v.stages()
	v.pattern()
	if len(p.MemoryPerGPU) != p.GPUs {
		v.issue("memory_per_gpu", "want %d values, one per device (got %d)", p.GPUs, len(p.MemoryPerGPU))
	}
	if c := pipeplan.IsContiguous(p.Stages); p.Contiguous != c {
		v.issue("contiguous", "is %v, but the stages say %v", p.Contiguous, c)
	}
}

func (v *validator) stages() {
	p := v.p
	if len(p.Stages) == 0 {
		v.issue("stages", "no stages")
		return
	}
	next := 1
	for k, s := range p.Stages {
		f := fmt.Sprintf("stages[%d]", k)
		if s.First != next {
			v.issue(f+".first", "want %d, the layer after the previous stage (got %d)", next, s.First)
		}
		if s.Last < s.First {
			v.issue(f+".last", "want a layer ≥ first = %d (got %d)", s.First, s.Last)
		}
		if s.GPU < 0 || s.GPU >= p.GPUs {
			v.issue(f+".gpu", "want a device in 0..%d (got %d)", p.GPUs-1, s.GPU)
		}
		if s.Recompute != nil && s.First <= s.Last && s.Last <= v.pr.L() {
			if rep := v.pr.replay(s); !rep.Valid {
				v.issue(f+".recompute", "its sequence does not replay within its budget of %d bytes above the stage input: %v",
					s.Recompute.BudgetBytes, rep.Err())
			}
		}
		next = max(s.Last, s.First) + 1
	}
	if l := v.pr.L(); next-1 != l {
		v.issue(fmt.Sprintf("stages[%d].last", len(p.Stages)-1), "the stages end at layer %d, the chain has %d layers", next-1, l)
	}
}

// crosses reports whether stage k's output goes to another device (k+1 exists).
func (v *validator) crosses(k int) bool { return pipeplan.Crosses(v.p.Stages, k) }

func (v *validator) pattern() {
	p, n := v.p, len(v.p.Stages)
	v.op = map[pipeplan.OpKind][]int{}
	for _, kind := range []pipeplan.OpKind{pipeplan.F, pipeplan.B, pipeplan.CF, pipeplan.CB} {
		v.op[kind] = make([]int, n)
		for k := range v.op[kind] {
			v.op[kind][k] = -1
		}
	}
	for i, o := range p.Pattern {
		f := fmt.Sprintf("pattern[%d]", i)
		if !o.Op.Valid() {
			v.issue(f+".op", "want F, B, CF or CB (got %q)", o.Op)
			continue
		}
		if o.Stage < 0 || o.Stage >= n {
			v.issue(f+".stage", "want a stage in 0..%d (got %d)", n-1, o.Stage)
			continue
		}
		if math.IsNaN(o.Start) || o.Start < 0 || o.Start >= p.Period+v.eps {
			v.issue(f+".start", "want a time in [0, period = %g) (got %v)", p.Period, o.Start)
		}
		if math.IsNaN(o.Duration) || o.Duration < 0 || o.Duration > p.Period+v.eps {
			v.issue(f+".duration", "want a time in [0, period = %g] (got %v)", p.Period, o.Duration)
		}
		if (o.Op == pipeplan.CF || o.Op == pipeplan.CB) && !v.crosses(o.Stage) {
			v.issue(f, "%s of stage %d, whose output stays on device %d (or which is the last stage)", o.Op, o.Stage, p.Stages[o.Stage].GPU)
			continue
		}
		if j := v.op[o.Op][o.Stage]; j >= 0 {
			v.issue(f, "a second %s of stage %d (the first is pattern[%d])", o.Op, o.Stage, j)
			continue
		}
		v.op[o.Op][o.Stage] = i
	}
	for k := range n {
		kinds := []pipeplan.OpKind{pipeplan.F, pipeplan.B}
		if v.crosses(k) {
			kinds = append(kinds, pipeplan.CF, pipeplan.CB)
		}
		for _, kind := range kinds {
			if v.op[kind][k] < 0 {
				v.issue("pattern", "no %s of stage %d", kind, k)
			}
		}
	}
}

// durations checks each operation against the model: a stage's forward and backward as
// its cost says (the layers' sums, or the replay of its recomputation), a transfer a/β.
func (v *validator) durations() {
	pr := v.pr
	for i, o := range v.p.Pattern {
		s := v.p.Stages[o.Stage]
		var want float64
		switch o.Op {
		case pipeplan.F, pipeplan.B:
			c, err := pr.Cost(s)
			if err != nil {
				continue // reported by structure
			}
			want = c.Fwd
			if o.Op == pipeplan.B {
				want = c.Bwd
			}
		case pipeplan.CF, pipeplan.CB:
			want = float64(pr.Layer(s.Last).Out) / pr.Options().Bandwidth
		}
		if math.Abs(o.Duration-want) > v.eps+1e-12*want {
			v.issue(fmt.Sprintf("pattern[%d].duration", i), "%s of stage %d lasts %.12g in the model (got %.12g)", o.Op, o.Stage, want, o.Duration)
		}
	}
}
