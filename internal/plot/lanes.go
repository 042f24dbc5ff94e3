package plot

import (
	"image/color"
	"math"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Span is one operation or transfer on a lane of a timeline or a Gantt chart.
type Span struct {
	Start, End float64
	// Kind picks the colour: an operation kind (F_all, F_ck, F_none, B, F, CF, CB), a
	// transfer direction (offload, prefetch) or, on a Gantt chart, the stage's.
	Kind string
	// Label is written inside the span when it fits.
	Label string
	// Stage is the pipeline stage of a Gantt chart's span (0-based), which picks its hue.
	Stage int
	// Recompute marks a span that recomputes activations (hatched): a pipeline plan's
	// backward of a stage that keeps only its input, a simulation's recomputation.
	Recompute bool
}

// lane draws spans as boxes between Y0 and Y1 (data coordinates), each filled with
// colour(span) and labelled when the label fits inside.
type lane struct {
	Y0, Y1 float64
	Spans  []Span
	Color  func(Span) color.Color
}

// Plot draws the boxes and their labels.
func (l *lane) Plot(c draw.Canvas, p *gplot.Plot) {
	x, y := p.Transforms(&c)
	sty := labelStyle(fontSize - 2)
	sty.XAlign, sty.YAlign = draw.XCenter, draw.YCenter
	for _, s := range l.Spans {
		r := vg.Rectangle{Min: vg.Point{X: x(s.Start), Y: y(l.Y0)}, Max: vg.Point{X: x(s.End), Y: y(l.Y1)}}
		// A box narrower than a hair line would vanish; draw it one line wide.
		if r.Max.X-r.Min.X < 0.5 {
			r.Max.X = r.Min.X + 0.5
		}
		c.SetColor(l.Color(s))
		c.Fill(r.Path())
		if s.Recompute {
			hatch(c, r)
		}
		if s.Label != "" && sty.Width(s.Label)+2 < r.Max.X-r.Min.X && sty.Height(s.Label) < r.Max.Y-r.Min.Y {
			c.FillText(sty, vg.Point{X: (r.Min.X + r.Max.X) / 2, Y: (r.Min.Y + r.Max.Y) / 2}, s.Label)
		}
	}
}

// DataRange covers the spans.
func (l *lane) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax = math.Inf(1), math.Inf(-1)
	for _, s := range l.Spans {
		xmin, xmax = math.Min(xmin, s.Start), math.Max(xmax, s.End)
	}
	return xmin, xmax, math.Min(l.Y0, l.Y1), math.Max(l.Y0, l.Y1)
}

// swatch is a legend entry: a filled box.
type swatch struct{ color color.Color }

// Thumbnail fills the legend's icon.
func (s swatch) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	pad := (r.Max.Y - r.Min.Y) / 6
	r.Min.Y += pad
	r.Max.Y -= pad
	c.SetColor(s.color)
	c.Fill(r.Path())
}

// laneTicks labels a y axis with ordinary ticks over [0, top] and one label per lane at
// its centre: memory above, lanes of operations below zero.
type laneTicks struct {
	top   float64
	names []string
	mids  []float64
}

// Ticks returns the memory ticks and the lane names.
func (t laneTicks) Ticks(_, _ float64) []gplot.Tick {
	ticks := gplot.DefaultTicks{}.Ticks(0, t.top)
	for i, n := range t.names {
		ticks = append(ticks, gplot.Tick{Value: t.mids[i], Label: n})
	}
	return ticks
}

// labelStyle is the style of text drawn inside a picture.
func labelStyle(size vg.Length) draw.TextStyle {
	p := gplot.New()
	sty := p.X.Tick.Label
	sty.Font.Size = size
	sty.Color = colorText
	return sty
}

// withLegend is a figure of a plot and its legend to the right of it, outside the data.
// The legend moves out of the plot, which then draws none.
func withLegend(p *gplot.Plot, w, h vg.Length) *Figure {
	leg := p.Legend
	p.Legend = gplot.NewLegend()
	leg.Left, leg.Top = true, true
	leg.XOffs, leg.YOffs = 0, 0
	leg.Padding = vg.Points(2)
	return &Figure{width: w, height: h, draw: func(dc draw.Canvas) {
		lw := leg.Rectangle(dc).Size().X + vg.Points(16)
		p.Draw(draw.Crop(dc, 0, -lw, 0, 0))
		leg.Draw(draw.Crop(dc, w-lw+vg.Points(8), 0, 0, -vg.Points(24)))
	}}
}
