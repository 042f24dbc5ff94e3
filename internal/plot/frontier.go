package plot

import (
	"errors"
	"fmt"
	"math"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/chainplan/chainplan"
)

// SeriesKind says how a series of a frontier is drawn.
type SeriesKind int

// The kinds of series.
const (
	// Steps is an optimal makespan in force from each point's budget up to the next one
	// (rotor's frontier): a staircase.
	Steps SeriesKind = iota
	// Points are separate plans, one marker each (checkpoint_sequential at each segment
	// count, store-all, the offloading planners at a few budgets).
	Points
)

// Point is one plan of a series: its budget or peak in bytes and its makespan.
type Point struct {
	Bytes    float64
	Makespan float64
}

// Series is one algorithm on a frontier.
type Series struct {
	// Name is the algorithm, as the legend shows it; known names get their colour.
	Name string
	Kind SeriesKind
	// Points in increasing Bytes order.
	Points []Point
}

// Mark is the chosen plan, drawn over the series.
type Mark struct {
	Label string
	Point
}

// FrontierData is what Frontier draws: the series of budget (x) against makespan (y).
type FrontierData struct {
	Title string
	// SumTime is the time without recomputation, Σ(u_F+u_B), the base of the overhead.
	SumTime float64
	// Overhead draws makespan / SumTime − 1 in percent instead of the makespan.
	Overhead bool
	Series   []Series
	// Chosen, when set, marks one plan with a ring, a label and a dashed line at its budget.
	Chosen *Mark
}

// Frontier draws the budget-versus-time trade-off of a chain: one staircase or set of
// markers per series, in the algorithm's colour, with a legend. It fails with an error
// wrapping chainplan.ErrUnsupported when there is nothing to draw or Overhead is asked
// without a SumTime.
func Frontier(d *FrontierData) (*Figure, error) {
	n := 0
	maxX, maxY := 0.0, 0.0
	for _, s := range d.Series {
		n += len(s.Points)
		for _, p := range s.Points {
			maxX, maxY = math.Max(maxX, p.Bytes), math.Max(maxY, p.Makespan)
		}
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: frontier: no series with points to draw", chainplan.ErrUnsupported)
	}
	if d.Overhead && !(d.SumTime > 0) {
		return nil, errors.New("frontier: the overhead needs the time without recomputation (SumTime)")
	}
	bs := bytesScale(maxX)
	ts := timeScale(maxY)
	ylabel := "makespan (" + ts.Name + ")"
	y := func(v float64) float64 { return v / ts.Div }
	if d.Overhead {
		ylabel = "overhead over no recomputation (%)"
		y = func(v float64) float64 { return 100 * (v/d.SumTime - 1) }
	}
	p := newPlot(d.Title, "activation memory budget ("+bs.Name+")", ylabel)
	xys := func(pts []Point) plotter.XYs {
		out := make(plotter.XYs, len(pts))
		for i, q := range pts {
			out[i] = plotter.XY{X: q.Bytes / bs.Div, Y: y(q.Makespan)}
		}
		return out
	}
	for i, s := range d.Series {
		if len(s.Points) == 0 {
			continue
		}
		col := algoColor(s.Name)
		switch s.Kind {
		case Steps:
			l, err := plotter.NewLine(xys(s.Points))
			if err != nil {
				return nil, fmt.Errorf("frontier: series %s: %w", s.Name, err)
			}
			l.StepStyle = plotter.PostStep
			l.LineStyle = lineStyle(col)
			p.Add(l)
			p.Legend.Add(s.Name, l)
		case Points:
			sc, err := plotter.NewScatter(xys(s.Points))
			if err != nil {
				return nil, fmt.Errorf("frontier: series %s: %w", s.Name, err)
			}
			sc.GlyphStyle = draw.GlyphStyle{Color: col, Radius: vg.Points(3), Shape: seriesGlyph(i)}
			p.Add(sc)
			p.Legend.Add(s.Name, sc)
		}
	}
	if c := d.Chosen; c != nil {
		at := plotter.XYs{{X: c.Bytes / bs.Div, Y: y(c.Makespan)}}
		ring, _ := plotter.NewScatter(at)
		ring.GlyphStyle = draw.GlyphStyle{Color: colorChosen, Radius: vg.Points(6), Shape: draw.RingGlyph{}}
		line := &vLine{X: at[0].X, Style: dashed(colorChosen)}
		lab, err := plotter.NewLabels(plotter.XYLabels{XYs: at, Labels: []string{c.Label}})
		if err != nil {
			return nil, err
		}
		lab.Offset = vg.Point{X: vg.Points(8), Y: vg.Points(4)}
		for i := range lab.TextStyle {
			lab.TextStyle[i] = labelStyle(fontSize - 1)
		}
		p.Add(line, ring, lab)
	}
	// The data's range with a margin: budgets that matter are often a narrow band far
	// from zero, which an axis from zero would squeeze into a corner.
	padRange(&p.X, 0.04)
	padRange(&p.Y, 0.06)
	// The legend goes beside the axes: the series fill the data area from corner to corner.
	return withLegend(p, figWidth+1.1*vg.Inch, figHeight), nil
}

// padRange widens an axis by share of its range on each side (of its value when the
// range is empty), never below zero when the data is not.
func padRange(a *gplot.Axis, share float64) {
	pad := (a.Max - a.Min) * share
	if pad == 0 {
		pad = math.Max(math.Abs(a.Max)*share, 1)
	}
	lo := a.Min - pad
	if a.Min >= 0 {
		lo = math.Max(lo, 0)
	}
	a.Min, a.Max = lo, a.Max+pad
}

// seriesGlyph gives marker series distinct shapes as well as colours (for print and for
// colour-blind readers).
func seriesGlyph(i int) draw.GlyphDrawer {
	shapes := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.SquareGlyph{}, draw.BoxGlyph{}, draw.CrossGlyph{}}
	return shapes[i%len(shapes)]
}

// vLine is a vertical line across the whole plot at X (in data coordinates).
type vLine struct {
	X     float64
	Style draw.LineStyle
}

// Plot draws the line.
func (l *vLine) Plot(c draw.Canvas, p *gplot.Plot) {
	x, _ := p.Transforms(&c)
	c.StrokeLine2(l.Style, x(l.X), c.Min.Y, x(l.X), c.Max.Y)
}

// DataRange makes the plot's x range include the line.
func (l *vLine) DataRange() (xmin, xmax, ymin, ymax float64) {
	return l.X, l.X, math.Inf(1), math.Inf(-1)
}

// hLine is a horizontal line across the whole plot at Y (in data coordinates).
type hLine struct {
	Y     float64
	Style draw.LineStyle
}

// Plot draws the line.
func (l *hLine) Plot(c draw.Canvas, p *gplot.Plot) {
	_, y := p.Transforms(&c)
	c.StrokeLine2(l.Style, c.Min.X, y(l.Y), c.Max.X, y(l.Y))
}

// DataRange makes the plot's y range include the line.
func (l *hLine) DataRange() (xmin, xmax, ymin, ymax float64) {
	return math.Inf(1), math.Inf(-1), l.Y, l.Y
}
