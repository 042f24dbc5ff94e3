package plot

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/chainplan/chainplan"
)

// Outcome is a stored plan with what its executions measured (a row of the store's
// plan_outcomes view): the predicted peak and step time beside the measured ones. For a
// pipeline plan (Pipeline set) the times are per mini-batch (the period against the
// measured time between micro-batches) and the peaks those of its busiest device.
type Outcome struct {
	PlanID        int64
	Algo          string
	BudgetBytes   int64
	PredictedPeak int64
	MeasuredPeak  int64
	PredictedTime float64
	MeasuredTime  float64
	Pipeline      bool
}

// timeName says what the time panel of History compares: a step, a pipeline's time per
// mini-batch, or both when the plans mix them.
func timeName(outs []Outcome) string {
	pipes := 0
	for _, o := range outs {
		if o.Pipeline {
			pipes++
		}
	}
	switch pipes {
	case 0:
		return "step time"
	case len(outs):
		return "time per mini-batch"
	}
	return "step time (pipelines: per mini-batch)"
}

// peakName says what the memory panel of History compares.
func peakName(outs []Outcome) string {
	if slices.ContainsFunc(outs, func(o Outcome) bool { return o.Pipeline }) {
		return "peak memory (pipelines: busiest device)"
	}
	return "peak memory"
}

// HistoryData is what History draws.
type HistoryData struct {
	Title    string
	Outcomes []Outcome
}

// History draws predicted against measured for stored plans that ran: the peak memory on
// the left, the step time (a pipeline's time per mini-batch) on the right, one marker per plan coloured by its algorithm and
// labelled with its plan id, over the diagonal where the prediction is exact. It fails
// with an error wrapping chainplan.ErrUnsupported when no plan has a measurement.
func History(d *HistoryData) (*Figure, error) {
	if len(d.Outcomes) == 0 {
		return nil, fmt.Errorf("%w: history: no plan with a measured execution to draw", chainplan.ErrUnsupported)
	}
	var algos []string
	maxPeak, maxTime := 0.0, 0.0
	for _, o := range d.Outcomes {
		if !slices.Contains(algos, o.Algo) {
			algos = append(algos, o.Algo)
		}
		maxPeak = math.Max(maxPeak, float64(max(o.PredictedPeak, o.MeasuredPeak)))
		maxTime = math.Max(maxTime, math.Max(o.PredictedTime, o.MeasuredTime))
	}
	bs, ts := bytesScale(maxPeak), timeScale(maxTime)
	peak, err := versus(d.Outcomes, algos, peakName(d.Outcomes)+" ("+bs.Name+")", maxPeak/bs.Div, func(o Outcome) (float64, float64) {
		return float64(o.PredictedPeak) / bs.Div, float64(o.MeasuredPeak) / bs.Div
	})
	if err != nil {
		return nil, err
	}
	step, err := versus(d.Outcomes, algos, timeName(d.Outcomes)+" ("+ts.Name+")", maxTime/ts.Div, func(o Outcome) (float64, float64) {
		return o.PredictedTime / ts.Div, o.MeasuredTime / ts.Div
	})
	if err != nil {
		return nil, err
	}
	title := d.Title
	return &Figure{width: figWidth + 2*vg.Inch, height: figHeight, draw: func(dc draw.Canvas) {
		top := dc
		if title != "" {
			sty := labelStyle(titleSize)
			sty.XAlign, sty.YAlign = draw.XCenter, draw.YTop
			dc.FillText(sty, vg.Point{X: dc.Center().X, Y: dc.Max.Y - 4}, title)
			top = draw.Crop(dc, 0, 0, 0, -(2*titleSize + 4))
		}
		tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Points(20), PadLeft: vg.Points(4), PadRight: vg.Points(8)}
		cs := gplot.Align([][]*gplot.Plot{{peak, step}}, tiles, top)
		peak.Draw(cs[0][0])
		step.Draw(cs[0][1])
	}}, nil
}

// versus is one panel of History: measured (y) against predicted (x) by algorithm, with
// the diagonal y = x up to top.
func versus(outs []Outcome, algos []string, what string, top float64, xy func(Outcome) (float64, float64)) (*gplot.Plot, error) {
	p := newPlot("", "predicted "+what, "measured "+what)
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs = vg.Points(8)
	diag, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: top * 1.1, Y: top * 1.1}})
	if err != nil {
		return nil, err
	}
	diag.LineStyle = dotted(colorGrid)
	diag.LineStyle.Color = colorText
	diag.LineStyle.Width = vg.Points(0.8)
	p.Add(diag)
	for i, a := range algos {
		var pts plotter.XYs
		var labels []string
		for _, o := range outs {
			if o.Algo != a {
				continue
			}
			x, y := xy(o)
			pts = append(pts, plotter.XY{X: x, Y: y})
			labels = append(labels, "#"+strconv.FormatInt(o.PlanID, 10))
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return nil, fmt.Errorf("history: %s: %w", a, err)
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: algoColor(a), Radius: vg.Points(3.5), Shape: seriesGlyph(i)}
		lab, err := plotter.NewLabels(plotter.XYLabels{XYs: pts, Labels: labels})
		if err != nil {
			return nil, err
		}
		lab.Offset = vg.Point{X: vg.Points(5), Y: vg.Points(3)}
		for j := range lab.TextStyle {
			lab.TextStyle[j] = labelStyle(fontSize - 2)
		}
		p.Add(sc, lab)
		p.Legend.Add(a, sc)
	}
	p.X.Min, p.Y.Min = 0, 0
	p.X.Max, p.Y.Max = top*1.1, top*1.1
	return p, nil
}
