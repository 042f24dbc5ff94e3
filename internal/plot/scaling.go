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
	"github.com/chainplan/chainplan/planner/paradl"
)

// ScalingPoint is one strategy's epoch time at a device count.
type ScalingPoint struct {
	Devices    int
	EpochTimeS float64
}

// ScalingSeries is one strategy across device counts, in increasing device order.
type ScalingSeries struct {
	Name   string
	Points []ScalingPoint
}

// ScalingData is what Scaling draws: epoch time against devices, one series per strategy.
type ScalingData struct {
	Title  string
	Series []ScalingSeries
}

// ScalingOf returns the scaling picture's data of an advice: per strategy and device
// count its fastest feasible candidate (a hybrid's best factorisation), strategies in the
// advice's order of first appearance.
func ScalingOf(a *paradl.Advice, title string) *ScalingData {
	best := map[paradl.Strategy]map[int]float64{}
	var order []paradl.Strategy
	for _, c := range a.Candidates {
		if !c.Feasible {
			continue
		}
		if best[c.Strategy] == nil {
			best[c.Strategy] = map[int]float64{}
			order = append(order, c.Strategy)
		}
		if t, ok := best[c.Strategy][c.Devices]; !ok || c.EpochTimeS < t {
			best[c.Strategy][c.Devices] = c.EpochTimeS
		}
	}
	slices.SortStableFunc(order, func(x, y paradl.Strategy) int {
		return slices.Index(paradl.Strategies, x) - slices.Index(paradl.Strategies, y)
	})
	d := &ScalingData{Title: title}
	for _, s := range order {
		ser := ScalingSeries{Name: string(s)}
		for p, t := range best[s] {
			ser.Points = append(ser.Points, ScalingPoint{Devices: p, EpochTimeS: t})
		}
		slices.SortFunc(ser.Points, func(x, y ScalingPoint) int { return x.Devices - y.Devices })
		d.Series = append(d.Series, ser)
	}
	return d
}

// Scaling draws epoch time against the number of devices, both on logarithmic axes (the
// devices in powers of two), one line with markers per strategy. It fails with an error
// wrapping chainplan.ErrUnsupported when there is nothing to draw.
func Scaling(d *ScalingData) (*Figure, error) {
	maxT, minT := 0.0, math.Inf(1)
	maxP := 1
	for _, s := range d.Series {
		for _, pt := range s.Points {
			if pt.EpochTimeS <= 0 || pt.Devices < 1 {
				return nil, fmt.Errorf("scaling: %s at %d devices: the time and the devices must be positive", s.Name, pt.Devices)
			}
			maxT, minT = math.Max(maxT, pt.EpochTimeS), math.Min(minT, pt.EpochTimeS)
			maxP = max(maxP, pt.Devices)
		}
	}
	if maxT == 0 {
		return nil, fmt.Errorf("%w: scaling: no feasible candidate to draw", chainplan.ErrUnsupported)
	}
	ts := timeScale(minT)
	p := newPlot(d.Title, "devices", "time per epoch ("+ts.Name+", log scale)")
	p.X.Scale, p.Y.Scale = gplot.LogScale{}, gplot.LogScale{}
	var ticks gplot.ConstantTicks
	for q := 1; q <= 2*maxP; q *= 2 {
		ticks = append(ticks, gplot.Tick{Value: float64(q), Label: strconv.Itoa(q)})
	}
	p.X.Tick.Marker = ticks
	p.Y.Tick.Marker = gplot.LogTicks{Prec: -1}
	for i, s := range d.Series {
		xys := make(plotter.XYs, len(s.Points))
		for j, pt := range s.Points {
			xys[j] = plotter.XY{X: float64(pt.Devices), Y: pt.EpochTimeS / ts.Div}
		}
		l, sc, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, fmt.Errorf("scaling: series %s: %w", s.Name, err)
		}
		col := palette[i%len(palette)]
		l.LineStyle = lineStyle(col)
		sc.GlyphStyle = draw.GlyphStyle{Color: col, Radius: vg.Points(3), Shape: seriesGlyph(i)}
		p.Add(l, sc)
		p.Legend.Add(s.Name, l, sc)
	}
	p.X.Min, p.X.Max = 0.8, float64(maxP)*1.25
	p.Y.Min, p.Y.Max = minT/ts.Div/1.5, maxT/ts.Div*1.5
	return withLegend(p, figWidth+1.6*vg.Inch, figHeight), nil
}
