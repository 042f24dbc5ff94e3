package main

import (
	"fmt"
	"math"
	"strings"
)

// colors of the algorithms in the plots.
var colors = map[string]string{
	"rotor": "#1f77b4", "offload": "#ff7f0e", "autocapper": "#2ca02c", "opportunist": "#9467bd", "pofo": "#d62728",
}

// panel geometry of the small multiples: one row per chain, one column per bandwidth.
const (
	panelW, panelH = 300, 210
	marginL        = 50
	marginT        = 30
	gapX, gapY     = 30, 45
)

// grid draws one panel per (chain, bandwidth) with one line per algorithm over α, the
// value given by y (NaN: no point), on a shared y range.
func grid(studies []*study, title, ylabel string, y func(result) float64) string {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, st := range studies {
		for _, p := range st.points {
			for _, a := range algos {
				if v := y(p.res[a]); !math.IsNaN(v) {
					lo, hi = min(lo, v), max(hi, v)
				}
			}
		}
	}
	if lo > hi {
		lo, hi = 0, 1
	}
	pad := (hi - lo) * 0.05
	lo, hi = lo-pad, hi+pad
	if hi-lo < 1e-9 {
		hi = lo + 1
	}
	cols := len(bandwidths)
	w := marginL + cols*(panelW+gapX) + 130
	h := marginT + len(studies)*(panelH+gapY) + 20
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n", w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	fmt.Fprintf(&b, `<text x="%d" y="18" font-size="14">%s</text>`+"\n", marginL, title)
	for r, st := range studies {
		for ci, beta := range bandwidths {
			x0 := marginL + ci*(panelW+gapX)
			y0 := marginT + r*(panelH+gapY) + 15
			px := func(alpha float64) float64 { return float64(x0) + (alpha-0.05)/0.9*float64(panelW) }
			py := func(v float64) float64 { return float64(y0) + (hi-v)/(hi-lo)*float64(panelH) }
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#888"/>`+"\n", x0, y0, panelW, panelH)
			fmt.Fprintf(&b, `<text x="%d" y="%d">%s, β = %.0f GB/s</text>`+"\n", x0, y0-4, st.name, beta/1e9)
			for i := 0; i <= 4; i++ {
				v := lo + float64(i)*(hi-lo)/4
				yy := py(v)
				fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/>`+"\n", x0, yy, x0+panelW, yy)
				if ci == 0 {
					fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%.2f</text>`+"\n", x0-4, yy+4, v)
				}
			}
			for _, a := range alphas {
				fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%.1f</text>`+"\n", px(a), y0+panelH+13, a)
			}
			for _, algo := range algos {
				var pts []string
				flush := func() {
					if len(pts) > 1 {
						fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.6" points="%s"/>`+"\n", colors[algo], strings.Join(pts, " "))
					}
					pts = pts[:0]
				}
				for _, p := range st.points {
					if p.beta != beta {
						continue
					}
					v := y(p.res[algo])
					if math.IsNaN(v) {
						flush()
						continue
					}
					pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(p.alpha), py(v)))
					fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="2.2" fill="%s"/>`+"\n", px(p.alpha), py(v), colors[algo])
				}
				flush()
			}
		}
		fmt.Fprintf(&b, `<text transform="rotate(-90)" x="%d" y="12" text-anchor="middle">%s</text>`+"\n",
			-(marginT + r*(panelH+gapY) + 15 + panelH/2), ylabel)
	}
	lx := marginL + cols*(panelW+gapX)
	for i, a := range algos {
		yy := marginT + 20 + i*18
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/>`+"\n", lx, yy, lx+20, yy, colors[a])
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", lx+25, yy+4, a)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d">x: α (M = (1−α)·M^low + α·M^high)</text>`+"\n", lx, marginT+20+len(algos)*18+10)
	b.WriteString("</svg>\n")
	return b.String()
}

// makespanPlot draws the makespans over the sequential time (fractional model).
func makespanPlot(studies []*study) string {
	return grid(studies, "Simulated makespan / sequential time (fractional model; missing points: no plan)", "makespan / Σ(u_F+u_B)",
		func(r result) float64 {
			if !r.ok {
				return math.NaN()
			}
			return r.frac
		})
}

// volumePlot draws the offloaded volume over the total activation size (Fig. 4.4/4.5).
func volumePlot(studies []*study) string {
	return grid(studies, "Offloaded bytes / total activation size Σā (rotor offloads nothing)", "offloaded / Σā",
		func(r result) float64 {
			if !r.ok {
				return math.NaN()
			}
			return r.offloaded
		})
}
