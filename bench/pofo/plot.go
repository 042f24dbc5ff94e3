package main

import (
	"fmt"
	"math"
	"path/filepath"

	"github.com/chainplan/chainplan/internal/plot"
)

// grid writes to path one panel per (chain, bandwidth) with one line per algorithm over α,
// the value given by y (NaN: no point), on a shared y range (internal/plot.Grid).
func grid(path string, studies []*study, title, ylabel string, y func(result) float64) error {
	d := &plot.GridData{Title: title, XLabel: "α (M = (1−α)·M^low + α·M^high)", YLabel: ylabel,
		Rows: len(studies), Cols: len(bandwidths)}
	for _, st := range studies {
		for _, beta := range bandwidths {
			pn := plot.Panel{Title: fmt.Sprintf("%s, β = %.0f GB/s", st.name, beta/1e9)}
			for _, algo := range algos {
				s := plot.Series{Name: algo}
				for _, p := range st.points {
					if p.beta == beta {
						s.Points = append(s.Points, plot.Point{Bytes: p.alpha, Makespan: y(p.res[algo])})
					}
				}
				pn.Series = append(pn.Series, s)
			}
			d.Panels = append(d.Panels, pn)
		}
	}
	f, err := plot.Grid(d)
	if err != nil {
		return err
	}
	return f.Save(path)
}

// writePlots writes the makespans over the sequential time (fractional model) and the
// offloaded volume over the total activation size (Fig. 4.4/4.5) into dir.
func writePlots(dir string, studies []*study) error {
	if err := grid(filepath.Join(dir, "pofo-eval.svg"), studies,
		"Simulated makespan / sequential time (fractional model; missing points: no plan)", "makespan / Σ(u_F+u_B)",
		func(r result) float64 {
			if !r.ok {
				return math.NaN()
			}
			return r.frac
		}); err != nil {
		return err
	}
	return grid(filepath.Join(dir, "pofo-offloaded.svg"), studies,
		"Offloaded bytes / total activation size Σā (rotor offloads nothing)", "offloaded / Σā",
		func(r result) float64 {
			if !r.ok {
				return math.NaN()
			}
			return r.offloaded
		})
}
