package plot

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/chainplan/chainplan"
)

// PipelineFormat is the format tag of a pipeline plan (DESIGN.md, "Pipeline plan").
const PipelineFormat = "chainplan.pipeline/v1"

// DefaultPeriods is the number of periods PipelineOf draws when asked for 0.
const DefaultPeriods = 3

// pipelinePlan holds the fields of a chainplan.pipeline/v1 document that the Gantt chart
// reads (DESIGN.md, "Pipeline plan").
type pipelinePlan struct {
	Format      string  `json:"format"`
	Algo        string  `json:"algo"`
	GPUs        int     `json:"gpus"`
	MemoryBytes float64 `json:"memory_bytes"`
	Period      float64 `json:"period"`
	Stages      []struct {
		First int `json:"first"`
		Last  int `json:"last"`
		GPU   int `json:"gpu"`
	} `json:"stages"`
	Pattern []struct {
		Op       string  `json:"op"`
		Stage    int     `json:"stage"`
		Start    float64 `json:"start"`
		Duration float64 `json:"duration"`
		Shift    int     `json:"shift"`
	} `json:"pattern"`
	MemoryPerGPU []float64 `json:"memory_per_gpu"`
}

// IsPipelinePlan reports whether doc is a JSON object whose format is that of a pipeline
// plan, so that a front end can tell a pipeline plan from a schedule before reading it.
func IsPipelinePlan(doc []byte) bool {
	var head struct {
		Format string `json:"format"`
	}
	return json.Unmarshal(doc, &head) == nil && head.Format == PipelineFormat
}

// PipelineOf reads a chainplan.pipeline/v1 document and lays out periods periods (0:
// DefaultPeriods) of its steady state: mini-batch b runs an operation at start + (b +
// shift)·period, so period j holds mini-batch j − shift of each operation; the numbers are
// offset so that the first period's smallest one is 0. A document that is not a pipeline
// plan, or whose stages, devices or pattern do not fit together, fails with an error
// wrapping chainplan.ErrInvalidPlan that names the field.
func PipelineOf(doc []byte, periods int) (*PipelineData, error) {
	if periods <= 0 {
		periods = DefaultPeriods
	}
	var p pipelinePlan
	dec := json.NewDecoder(bytes.NewReader(doc))
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("%w: pipeline plan: %v", chainplan.ErrInvalidPlan, err)
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: pipeline plan: %s", chainplan.ErrInvalidPlan, fmt.Sprintf(format, args...))
	}
	switch {
	case p.Format != PipelineFormat:
		return nil, bad("format is %q, want %q (a checkpointing or offloading plan has no Gantt chart; plot its timeline)", p.Format, PipelineFormat)
	case p.GPUs < 1:
		return nil, bad("gpus must be at least 1 (got %d)", p.GPUs)
	case !(p.Period > 0) || math.IsInf(p.Period, 0):
		return nil, bad("period must be positive (got %v)", p.Period)
	case len(p.Stages) == 0:
		return nil, bad("stages is empty")
	}
	for k, s := range p.Stages {
		if s.GPU < 0 || s.GPU >= p.GPUs {
			return nil, bad("stages[%d].gpu %d is not in 0..%d", k, s.GPU, p.GPUs-1)
		}
	}
	d := &PipelineData{
		Title:   fmt.Sprintf("Pipeline schedule: %s on %d devices, period %s", p.Algo, p.GPUs, formatTime(p.Period)),
		Period:  p.Period,
		Periods: periods,
		Stages:  len(p.Stages),
	}
	for g := range p.GPUs {
		d.Lanes = append(d.Lanes, "GPU "+strconv.Itoa(g))
	}
	d.Spans = make([][]Span, p.GPUs)
	links := map[[2]int]int{} // device pair → lane
	minShift := 0
	for _, o := range p.Pattern {
		minShift = min(minShift, -o.Shift)
	}
	for i, o := range p.Pattern {
		if o.Stage < 0 || o.Stage >= len(p.Stages) {
			return nil, bad("pattern[%d].stage %d is not in 0..%d", i, o.Stage, len(p.Stages)-1)
		}
		if o.Duration < 0 || math.IsNaN(o.Duration) || math.IsNaN(o.Start) {
			return nil, bad("pattern[%d]: start %v and duration %v must be numbers, the duration ≥ 0", i, o.Start, o.Duration)
		}
		var ln int
		switch o.Op {
		case "F", "B":
			ln = p.Stages[o.Stage].GPU
		case "CF", "CB":
			if o.Stage+1 >= len(p.Stages) {
				return nil, bad("pattern[%d]: %s of the last stage %d has no next stage to talk to", i, o.Op, o.Stage)
			}
			a, b := p.Stages[o.Stage].GPU, p.Stages[o.Stage+1].GPU
			pair := [2]int{min(a, b), max(a, b)}
			var ok bool
			if ln, ok = links[pair]; !ok {
				ln = len(d.Lanes)
				links[pair] = ln
				d.Lanes = append(d.Lanes, fmt.Sprintf("link %d-%d", pair[0], pair[1]))
				d.Spans = append(d.Spans, nil)
			}
		default:
			return nil, bad("pattern[%d].op %q is not F, B, CF or CB", i, o.Op)
		}
		for j := range periods {
			t := o.Start + float64(j)*p.Period
			b := j - o.Shift - minShift
			d.Spans[ln] = append(d.Spans[ln], Span{Start: t, End: t + o.Duration, Kind: o.Op,
				Label: o.Op + strconv.Itoa(b), Stage: o.Stage})
		}
	}
	for _, l := range d.Spans {
		slices.SortFunc(l, func(a, b Span) int { return cmpFloat(a.Start, b.Start) })
	}
	for _, v := range p.MemoryPerGPU {
		d.MemoryBytes = append(d.MemoryBytes, int64(v))
	}
	d.LimitBytes = int64(p.MemoryBytes)
	return d, nil
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// formatTime writes a time in seconds in the unit that reads best ("410 ms").
func formatTime(t float64) string {
	s := timeScale(t)
	return strconv.FormatFloat(t/s.Div, 'g', 4, 64) + " " + s.Name
}
