package plot

import (
	"fmt"
	"math"

	"image/color"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/chainplan/chainplan"
)

// Level is the memory a plan holds from Start to End.
type Level struct {
	Start, End float64
	Bytes      int64
}

// TimelineData is what Timeline draws: memory over time above, the compute operations and
// the transfers on their lanes below, on one time axis.
type TimelineData struct {
	Title string
	// Memory is the memory over time, in time order: each level is held from its Start to
	// its End and joined to the next by a straight line (a level with Start == End is a
	// sample at one instant).
	Memory []Level
	// Ops are the compute operations (Kind: F_all, F_ck, F_none, B; Label: "F3", "B3").
	Ops []Span
	// Transfers are the copies on the GPU↔host link (Kind: offload or prefetch); an empty
	// list draws no link lane.
	Transfers []Span
	// BudgetBytes draws the budget line (0: none).
	BudgetBytes int64
	// PeakBytes at PeakTime is marked.
	PeakBytes int64
	PeakTime  float64
	// MeasuredPeakBytes draws what executions of the plan measured (0: none).
	MeasuredPeakBytes int64
}

// laneShare is the height of a lane of operations as a share of the memory axis.
const laneShare = 0.09

// Timeline draws the memory timeline of a plan: the memory curve (filled below), the
// budget line, the peak marked, the measured peak when known, and below the time axis one
// lane of compute operations coloured by kind and, for offloading plans, one lane of
// transfers. It fails with an error wrapping chainplan.ErrUnsupported when there is no
// operation to draw.
func Timeline(d *TimelineData) (*Figure, error) {
	if len(d.Ops) == 0 || len(d.Memory) == 0 {
		return nil, fmt.Errorf("%w: timeline: the plan has no operations to draw", chainplan.ErrUnsupported)
	}
	top := float64(max(d.BudgetBytes, d.PeakBytes, d.MeasuredPeakBytes))
	for _, l := range d.Memory {
		top = math.Max(top, float64(l.Bytes))
	}
	end := 0.0
	for _, s := range append(append([]Span(nil), d.Ops...), d.Transfers...) {
		end = math.Max(end, s.End)
	}
	bs, ts := bytesScale(top), timeScale(end)
	top /= bs.Div
	p := newPlot(d.Title, "time ("+ts.Name+")", "memory ("+bs.Name+")")
	h := top * laneShare
	lanes := laneTicks{top: top, names: []string{"compute"}, mids: []float64{-h}}
	ops := &lane{Y0: -1.5 * h, Y1: -0.5 * h, Spans: scaleSpans(d.Ops, ts), Color: kindColor}
	p.Add(ops)
	if len(d.Transfers) > 0 {
		p.Add(&lane{Y0: -2.8 * h, Y1: -1.8 * h, Spans: scaleSpans(d.Transfers, ts), Color: kindColor})
		lanes.names, lanes.mids = append(lanes.names, "link"), append(lanes.mids, -2.3*h)
	}
	p.Y.Tick.Marker = lanes

	curve := make(plotter.XYs, 0, 2*len(d.Memory))
	for _, l := range d.Memory {
		v := float64(l.Bytes) / bs.Div
		curve = append(curve, plotter.XY{X: l.Start / ts.Div, Y: v}, plotter.XY{X: l.End / ts.Div, Y: v})
	}
	area := append(plotter.XYs{{X: curve[0].X, Y: 0}}, curve...)
	area = append(area, plotter.XY{X: curve[len(curve)-1].X, Y: 0})
	fill, err := plotter.NewPolygon(area)
	if err != nil {
		return nil, fmt.Errorf("timeline: %w", err)
	}
	fill.Color, fill.LineStyle.Width = colorFill, 0
	line, err := plotter.NewLine(curve)
	if err != nil {
		return nil, fmt.Errorf("timeline: %w", err)
	}
	line.LineStyle = lineStyle(colorMemory)
	p.Add(fill, line)
	p.Legend.Add("memory (simulated)", line)

	if d.BudgetBytes > 0 {
		b := &hLine{Y: float64(d.BudgetBytes) / bs.Div, Style: dashed(colorBudget)}
		p.Add(b)
		p.Legend.Add("budget "+chainplan.FormatBytes(d.BudgetBytes), lineThumb(b.Style))
	}
	if d.MeasuredPeakBytes > 0 {
		m := &hLine{Y: float64(d.MeasuredPeakBytes) / bs.Div, Style: dotted(colorMeasure)}
		p.Add(m)
		p.Legend.Add("measured peak "+chainplan.FormatBytes(d.MeasuredPeakBytes), lineThumb(m.Style))
	}
	if d.PeakBytes > 0 {
		pk, _ := plotter.NewScatter(plotter.XYs{{X: d.PeakTime / ts.Div, Y: float64(d.PeakBytes) / bs.Div}})
		pk.GlyphStyle = draw.GlyphStyle{Color: colorPeak, Radius: vg.Points(4), Shape: draw.TriangleGlyph{}}
		p.Add(pk)
		p.Legend.Add("peak "+chainplan.FormatBytes(d.PeakBytes), pk)
	}
	for _, k := range []string{"F_all", "F_ck", "F_none", "B", "offload", "prefetch"} {
		if hasKind(d.Ops, k) || hasKind(d.Transfers, k) {
			p.Legend.Add(k, swatch{kindColor(Span{Kind: k})})
		}
	}
	p.X.Min, p.X.Max = 0, end/ts.Div
	p.Y.Max = top * 1.08
	return withLegend(p, figWidth+1.4*vg.Inch, figHeight), nil
}

// kindColor is the colour of an operation or transfer by its kind.
func kindColor(s Span) color.Color {
	if c, ok := opColors[s.Kind]; ok {
		return c
	}
	return colorOther
}

func hasKind(spans []Span, kind string) bool {
	for _, s := range spans {
		if s.Kind == kind {
			return true
		}
	}
	return false
}

// scaleSpans returns the spans with their times divided by the scale's unit.
func scaleSpans(spans []Span, ts scale) []Span {
	out := make([]Span, len(spans))
	for i, s := range spans {
		s.Start, s.End = s.Start/ts.Div, s.End/ts.Div
		out[i] = s
	}
	return out
}

// lineThumb is a legend entry drawn as a line.
type lineThumb draw.LineStyle

// Thumbnail draws the line across the icon.
func (l lineThumb) Thumbnail(c *draw.Canvas) {
	y := c.Center().Y
	c.StrokeLine2(draw.LineStyle(l), c.Min.X, y, c.Max.X, y)
}

// dotted returns a dotted line in colour c.
func dotted(c color.Color) draw.LineStyle {
	return draw.LineStyle{Color: c, Width: lineWidth, Dashes: []vg.Length{vg.Points(2), vg.Points(2)}}
}
