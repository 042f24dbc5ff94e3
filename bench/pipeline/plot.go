package main

import (
	"fmt"
	"math"
	"path/filepath"

	"github.com/chainplan/chainplan/internal/plot"
)

// writePlots draws, for each bandwidth, one panel per (model, P) with one line per planner:
// the speedup U(1,L)/period over the memory per device in GiB (the paper's Fig. 8 / 7.9
// against memory). Missing points: no plan.
func writePlots(dir string, all []*series) error {
	for _, beta := range bandwidths {
		var names []string
		gpus := map[int]bool{}
		for _, s := range all {
			if len(names) == 0 || names[len(names)-1] != s.model {
				names = append(names, s.model)
			}
			gpus[s.gpus] = true
		}
		cols := len(gpus)
		d := &plot.GridData{Title: fmt.Sprintf("Speedup U(1,L)/period against memory per device, β = %.0f GB/s (missing points: no plan)", beta/1e9),
			XLabel: "memory per device (GiB)", YLabel: "speedup", Rows: len(names), Cols: cols}
		for _, s := range all {
			if s.beta != beta {
				continue
			}
			pn := plot.Panel{Title: fmt.Sprintf("%s, P = %d", s.model, s.gpus)}
			for _, a := range algos {
				ser := plot.Series{Name: a}
				for _, pt := range s.points {
					y := math.NaN()
					if r := pt.res[a]; r.ok {
						y = s.seq() / r.period
					}
					ser.Points = append(ser.Points, plot.Point{Bytes: float64(pt.memory) / (1 << 30), Makespan: y})
				}
				pn.Series = append(pn.Series, ser)
			}
			d.Panels = append(d.Panels, pn)
		}
		if len(d.Panels) != d.Rows*d.Cols {
			return fmt.Errorf("plot: %d panels for %d models × %d device counts", len(d.Panels), d.Rows, d.Cols)
		}
		f, err := plot.Grid(d)
		if err != nil {
			return err
		}
		if err := f.Save(filepath.Join(dir, fmt.Sprintf("pipeline-eval-%.0fGBps.svg", beta/1e9))); err != nil {
			return err
		}
	}
	return nil
}
