package plot

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/pipeplan"
)

// DefaultPeriods is the number of periods PipelineOf draws when asked for 0.
const DefaultPeriods = 3

// PipelineOf lays out periods periods (0: DefaultPeriods) of the steady state of a
// pipeline plan (read by pipeplan.Parse): mini-batch b runs an operation at start + (b +
// shift)·period, so period j holds mini-batch j − shift of each operation; the numbers are
// offset so that the first period's smallest one is 0. The backward of a stage that
// recomputes (Stage.Recompute) is marked Recompute: it runs the stage's forward again. A plan whose stages, devices or
// pattern do not fit together fails with an error wrapping chainplan.ErrInvalidPlan that
// names the field.
func PipelineOf(p *pipeplan.Plan, periods int) (*PipelineData, error) {
	if periods <= 0 {
		periods = DefaultPeriods
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: pipeline plan: %s", chainplan.ErrInvalidPlan, fmt.Sprintf(format, args...))
	}
	switch {
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
		Devices: p.GPUs,
	}
	for g := range p.GPUs {
		d.Lanes = append(d.Lanes, deviceName(DeviceAny, g))
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
		case pipeplan.F, pipeplan.B:
			ln = p.Stages[o.Stage].GPU
		case pipeplan.CF, pipeplan.CB:
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
			d.Spans[ln] = append(d.Spans[ln], Span{Start: t, End: t + o.Duration, Kind: string(o.Op),
				Label: string(o.Op) + strconv.Itoa(b), Stage: o.Stage,
				Recompute: o.Op == pipeplan.B && p.Stages[o.Stage].Recompute != nil})
		}
	}
	for _, l := range d.Spans {
		slices.SortFunc(l, func(a, b Span) int { return cmpFloat(a.Start, b.Start) })
	}
	d.MemoryBytes = slices.Clone(p.MemoryPerGPU)
	d.LimitBytes = p.MemoryBytes
	return d, nil
}

// The kinds of device a picture names its lanes after (SetDeviceKind).
const (
	DeviceAny = "device"
	DeviceCPU = "CPU"
	DeviceGPU = "GPU"
)

// DeviceKindOf returns the kind of device of a profile's device string ("cpu", "cuda:0",
// ...): DeviceCPU, DeviceGPU, or DeviceAny when it says neither.
func DeviceKindOf(device string) string {
	switch {
	case strings.HasPrefix(device, "cpu"):
		return DeviceCPU
	case strings.HasPrefix(device, "cuda"):
		return DeviceGPU
	}
	return DeviceAny
}

func deviceName(kind string, g int) string { return kind + " " + strconv.Itoa(g) }

// SetDeviceKind names the device lanes and the memory bars after the kind of device the
// plan runs on ("CPU 0" for a run profiled on the CPU; "device 0" when unknown).
func (d *PipelineData) SetDeviceKind(kind string) {
	d.DeviceKind = kind
	for g := range min(d.Devices, len(d.Lanes)) {
		d.Lanes[g] = deviceName(kind, g)
	}
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

// FormatTime writes a time in seconds in the unit that reads best ("410 ms").
func FormatTime(t float64) string { return formatTime(t) }

// formatTime writes a time in seconds in the unit that reads best ("410 ms").
func formatTime(t float64) string {
	s := timeScale(t)
	return strconv.FormatFloat(t/s.Div, 'g', 4, 64) + " " + s.Name
}
