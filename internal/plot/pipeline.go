package plot

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/chainplan/chainplan"
)

// PipelineData is what Pipeline draws: a few periods of a pipeline plan's steady state,
// one lane per device and per link, and each device's memory against the limit.
type PipelineData struct {
	Title string
	// Period is the time between two mini-batches; Periods is how many are drawn.
	Period  float64
	Periods int
	// Lanes names the lanes, top to bottom: the Devices devices first ("device 0", or
	// "CPU 0", "GPU 0" after SetDeviceKind), then the links ("link 0-1", ...); Spans[i]
	// holds lane i's operations (Kind F, B, CF or CB; Stage picks the hue; Label the
	// operation and its mini-batch: "F3" is the forward of mini-batch 3).
	Lanes   []string
	Spans   [][]Span
	Devices int
	// DeviceKind names the devices (DeviceAny, DeviceCPU, DeviceGPU; "" is DeviceAny).
	DeviceKind string
	// Stages is the number of stages, for the legend.
	Stages int
	// MemoryBytes is each device's predicted peak memory; LimitBytes the memory of a
	// device. MeasuredBytes, when set, is each device's peak as measured by the runner
	// (0 for a device that did not report).
	MemoryBytes   []int64
	MeasuredBytes []int64
	LimitBytes    int64
}

// Pipeline draws a pipeline plan: a Gantt chart with one lane per device and per link,
// each operation coloured by its stage (forwards and sends in the stage's colour,
// backwards and gradient sends darker, recomputations hatched, with a legend entry when
// there are any) and labelled with its mini-batch, the period boundaries dotted; below it, each device's memory as a bar against the limit. It fails
// with an error wrapping chainplan.ErrUnsupported when there is nothing to draw.
func Pipeline(d *PipelineData) (*Figure, error) {
	if len(d.Lanes) == 0 || len(d.Lanes) != len(d.Spans) || !(d.Period > 0) {
		return nil, fmt.Errorf("%w: pipeline: no lanes or no period to draw", chainplan.ErrUnsupported)
	}
	end := float64(d.Periods) * d.Period
	for _, l := range d.Spans {
		for _, s := range l {
			end = math.Max(end, s.End)
		}
	}
	ts := timeScale(end)
	g := newPlot(d.Title, "time ("+ts.Name+"); F3, B3: forward and backward of mini-batch 3", "")
	var ticks []gplot.Tick
	n := len(d.Lanes)
	for i, name := range d.Lanes {
		// Lane i is drawn at height n−1−i, so that the first lane is on top.
		y := float64(n - 1 - i)
		g.Add(&lane{Y0: y - 0.4, Y1: y + 0.4, Spans: scaleSpans(d.Spans[i], ts), Color: stageShade})
		ticks = append(ticks, gplot.Tick{Value: y, Label: name})
	}
	g.Y.Tick.Marker = gplot.ConstantTicks(ticks)
	g.Y.Min, g.Y.Max = -0.6, float64(n)-0.4
	g.X.Min, g.X.Max = 0, end/ts.Div
	for k := 1; k <= d.Periods; k++ {
		g.Add(&vLine{X: float64(k) * d.Period / ts.Div, Style: dotted(colorGrid)})
	}
	for k := range d.Stages {
		g.Legend.Add("stage "+strconv.Itoa(k), swatch{stageColor(k)})
	}
	g.Legend.Add("F, CF", swatch{lighten(colorText, 0.55)})
	g.Legend.Add("B, CB", swatch{colorText})
	if d.Recomputes() {
		g.Legend.Add(recomputeLegend, hatchSwatch{})
	}

	m, err := memoryBars(d)
	if err != nil {
		return nil, err
	}
	gantt := withLegend(g, figWidth+1.2*vg.Inch, figHeight)
	h := figHeight + 2.2*vg.Inch
	return &Figure{width: gantt.width, height: h, draw: func(dc draw.Canvas) {
		gantt.draw(draw.Crop(dc, 0, 0, 2.2*vg.Inch, 0))
		m.Draw(draw.Crop(dc, 0, -1.2*vg.Inch, 0, -(figHeight)))
	}}, nil
}

// Recomputes reports whether a span recomputes (Span.Recompute): the chart then says
// what its hatched boxes are.
func (d *PipelineData) Recomputes() bool {
	for _, l := range d.Spans {
		if slices.ContainsFunc(l, func(s Span) bool { return s.Recompute }) {
			return true
		}
	}
	return false
}

// memoryBars is the panel of each device's memory against the limit: the predicted peak,
// and beside it the measured one when the plan ran.
func memoryBars(d *PipelineData) (*gplot.Plot, error) {
	top := float64(d.LimitBytes)
	for _, v := range append(slices.Clone(d.MemoryBytes), d.MeasuredBytes...) {
		top = math.Max(top, float64(v))
	}
	bs := bytesScale(top)
	p := newPlot("", "", "memory ("+bs.Name+")")
	vals := make(plotter.Values, len(d.MemoryBytes))
	var names []string
	kind := d.DeviceKind
	if kind == "" {
		kind = DeviceAny
	}
	for i, v := range d.MemoryBytes {
		vals[i] = float64(v) / bs.Div
		names = append(names, deviceName(kind, i))
	}
	width := vg.Points(28)
	bars, err := plotter.NewBarChart(vals, width)
	if err != nil {
		return nil, fmt.Errorf("pipeline memory: %w", err)
	}
	bars.Color, bars.LineStyle.Width = colorBars, 0
	p.Add(bars)
	if len(d.MeasuredBytes) == len(d.MemoryBytes) && slices.ContainsFunc(d.MeasuredBytes, func(v int64) bool { return v > 0 }) {
		mv := make(plotter.Values, len(d.MeasuredBytes))
		for i, v := range d.MeasuredBytes {
			mv[i] = float64(v) / bs.Div
		}
		measured, err := plotter.NewBarChart(mv, width)
		if err != nil {
			return nil, fmt.Errorf("pipeline memory: %w", err)
		}
		measured.Color, measured.LineStyle.Width = colorRanBar, 0
		bars.Offset, measured.Offset = -width/2, width/2
		p.Add(measured)
		p.Legend.Add("measured peak", swatch{colorRanBar})
	}
	p.NominalX(names...)
	if d.LimitBytes > 0 {
		p.Add(&hLine{Y: float64(d.LimitBytes) / bs.Div, Style: dashed(colorBudget)})
		p.Legend.Add("limit "+chainplan.FormatBytes(d.LimitBytes), lineThumb(dashed(colorBudget)))
	}
	p.Legend.Add("predicted peak", swatch{colorBars})
	p.Legend.Top, p.Legend.Left = true, false
	p.Y.Min = 0
	p.Y.Max = top / bs.Div * 1.25
	return p, nil
}

// stageShade colours a Gantt span: its stage's colour, lighter for the forward pass (F,
// CF), darker for the backward pass (B, CB).
func stageShade(s Span) color.Color {
	c := stageColor(s.Stage)
	if s.Kind == "F" || s.Kind == "CF" {
		return lighten(c, 0.45)
	}
	return c
}

// lighten mixes c with white: share 0 keeps c, 1 gives white.
func lighten(c color.RGBA, share float64) color.RGBA {
	mix := func(v uint8) uint8 { return uint8(float64(v) + (255-float64(v))*share) }
	return color.RGBA{mix(c.R), mix(c.G), mix(c.B), 0xff}
}
