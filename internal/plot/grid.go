package plot

import (
	"fmt"
	"math"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/chainplan/chainplan"
)

// Panel is one panel of a grid of small multiples: one line per series, points with a NaN
// y leaving a gap.
type Panel struct {
	Title  string
	Series []Series // Series.Points hold (x, y) in Bytes and Makespan
}

// GridData is what Grid draws: Rows × Cols panels (row-major) on shared axes.
type GridData struct {
	Title          string
	XLabel, YLabel string
	Rows, Cols     int
	Panels         []Panel
}

// Grid draws small multiples: panels of lines with markers, one colour per series name
// (the algorithms' colours), the same y range in every panel, one legend on the right.
// bench/pofo draws its evaluation with it. It fails with an error wrapping
// chainplan.ErrUnsupported when the panels do not fill the grid.
func Grid(d *GridData) (*Figure, error) {
	if d.Rows < 1 || d.Cols < 1 || len(d.Panels) != d.Rows*d.Cols {
		return nil, fmt.Errorf("%w: grid: %d panels for %d×%d", chainplan.ErrUnsupported, len(d.Panels), d.Rows, d.Cols)
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, p := range d.Panels {
		for _, s := range p.Series {
			for _, q := range s.Points {
				if !math.IsNaN(q.Makespan) {
					lo, hi = math.Min(lo, q.Makespan), math.Max(hi, q.Makespan)
				}
			}
		}
	}
	if lo > hi {
		lo, hi = 0, 1
	}
	pad := math.Max((hi-lo)*0.05, 1e-9)
	plots := make([][]*gplot.Plot, d.Rows)
	legend := gplot.NewLegend()
	seen := map[string]bool{}
	for i, pn := range d.Panels {
		p := newPlot(pn.Title, d.XLabel, d.YLabel)
		p.Title.TextStyle.Font.Size = fontSize
		for _, s := range pn.Series {
			col := algoColor(s.Name)
			for _, run := range unbroken(s.Points) {
				l, sc, err := plotter.NewLinePoints(run)
				if err != nil {
					return nil, fmt.Errorf("grid: panel %q, series %s: %w", pn.Title, s.Name, err)
				}
				l.LineStyle = lineStyle(col)
				sc.GlyphStyle = draw.GlyphStyle{Color: col, Radius: vg.Points(2), Shape: draw.CircleGlyph{}}
				if len(run) > 1 {
					p.Add(l)
				}
				p.Add(sc)
				if !seen[s.Name] {
					seen[s.Name] = true
					legend.Add(s.Name, l)
				}
			}
		}
		p.Y.Min, p.Y.Max = lo-pad, hi+pad
		plots[i/d.Cols] = append(plots[i/d.Cols], p)
	}
	legend.Left, legend.Top = true, true
	legend.TextStyle.Font.Size = fontSize - 1
	legend.Padding = vg.Points(2)
	w := vg.Length(d.Cols)*3.4*vg.Inch + 1.4*vg.Inch
	h := vg.Length(d.Rows)*2.6*vg.Inch + 0.4*vg.Inch
	title := d.Title
	return &Figure{width: w, height: h, draw: func(dc draw.Canvas) {
		sty := labelStyle(titleSize)
		sty.XAlign, sty.YAlign = draw.XCenter, draw.YTop
		dc.FillText(sty, vg.Point{X: dc.Center().X, Y: dc.Max.Y - 4}, title)
		body := draw.Crop(dc, 0, -1.4*vg.Inch, 0, -0.4*vg.Inch)
		cs := gplot.Align(plots, draw.Tiles{Rows: d.Rows, Cols: d.Cols, PadX: vg.Points(14), PadY: vg.Points(14),
			PadTop: vg.Points(4), PadLeft: vg.Points(4)}, body)
		for r := range plots {
			for c := range plots[r] {
				plots[r][c].Draw(cs[r][c])
			}
		}
		legend.Draw(draw.Crop(dc, w-1.3*vg.Inch, 0, 0, -0.5*vg.Inch))
	}}, nil
}

// unbroken splits points at those whose y is NaN (no value) into runs to draw as lines.
func unbroken(pts []Point) []plotter.XYs {
	var runs []plotter.XYs
	var cur plotter.XYs
	for _, q := range pts {
		if math.IsNaN(q.Makespan) {
			if len(cur) > 0 {
				runs = append(runs, cur)
			}
			cur = nil
			continue
		}
		cur = append(cur, plotter.XY{X: q.Bytes, Y: q.Makespan})
	}
	if len(cur) > 0 {
		runs = append(runs, cur)
	}
	return runs
}
