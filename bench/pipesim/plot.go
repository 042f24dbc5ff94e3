package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/chainplan/chainplan/bench/internal/profiles"
	"github.com/chainplan/chainplan/internal/plot"
	"github.com/chainplan/chainplan/planner/contiguous"
	"github.com/chainplan/chainplan/planner/pipesim"
)

// writePlots draws two grids, one panel per (model, P) and one line per schedule over N:
// the speedup U(1,L)/(time per micro-batch), and the largest device's peak memory relative
// to 1F1B-flush's.
func writePlots(dir string, all []*point, ns []int) error {
	type metric struct {
		file, title, ylabel string
		value               func(pt *point, o outcome) float64
	}
	metrics := []metric{
		{"pipesim-eval-speedup.svg", "Speedup U(1,L) / time per micro-batch against micro-batches per mini-batch, 12 GB/s links",
			"speedup", func(pt *point, o outcome) float64 { return pt.seq / o.res.MicrobatchPeriod }},
		{"pipesim-eval-memory.svg", "Peak memory of the largest device, relative to 1f1b-flush's, against micro-batches per mini-batch",
			"memory / 1f1b-flush's", func(pt *point, o outcome) float64 {
				return float64(o.peak) / float64(pt.res["1f1b-flush"].peak)
			}},
	}
	for _, m := range metrics {
		var rows []string
		cols := map[int]bool{}
		for _, pt := range all {
			if len(rows) == 0 || rows[len(rows)-1] != pt.model {
				rows = append(rows, pt.model)
			}
			cols[pt.gpus] = true
		}
		d := &plot.GridData{Title: m.title, XLabel: "micro-batches per mini-batch N", YLabel: m.ylabel, Rows: len(rows), Cols: len(cols)}
		for i := 0; i < len(all); i += len(ns) {
			pn := plot.Panel{Title: fmt.Sprintf("%s, P = %d", all[i].model, all[i].gpus)}
			for _, v := range schedules {
				ser := plot.Series{Name: v.name}
				for _, pt := range all[i : i+len(ns)] {
					y := math.NaN()
					if o := pt.res[v.name]; o.ok {
						y = m.value(pt, o)
					}
					ser.Points = append(ser.Points, plot.Point{Bytes: float64(pt.n), Makespan: y})
				}
				pn.Series = append(pn.Series, ser)
			}
			d.Panels = append(d.Panels, pn)
		}
		f, err := plot.Grid(d)
		if err != nil {
			return err
		}
		if err := f.Save(filepath.Join(dir, m.file)); err != nil {
			return err
		}
	}
	return nil
}

// writeExamples writes the Gantt pictures and the Chrome trace docs/pipesim.md shows: the
// TiMePReSt timeline of spec §4.5 (W=4, N=2, unit time) and resnet50's 1F1B-flush on four
// stages with links.
func writeExamples(dir string) error {
	c, err := profiles.PipeDream("resnet50")
	if err != nil {
		return err
	}
	pr, err := problem(c, 4, 0)
	if err != nil {
		return err
	}
	stages := contiguous.Balanced(pr, 4)
	unit, err := pipesim.NewSetup(pr, stages, pipesim.SetupOptions{})
	if err != nil {
		return err
	}
	linked, err := pipesim.NewSetup(pr, stages, pipesim.SetupOptions{Links: true})
	if err != nil {
		return err
	}
	pics := []struct {
		file string
		su   *pipesim.Setup
		o    pipesim.Options
		show int
	}{
		{"pipesim-timeprest.svg", unit, pipesim.Options{Schedule: pipesim.TiMePReSt, Microbatches: 2, Minibatches: 12, UnitTime: true}, 4},
		{"pipesim-1f1b.svg", linked, pipesim.Options{Schedule: pipesim.OneFOneBFlush, Microbatches: 8, Minibatches: 2}, 2},
	}
	for _, p := range pics {
		p.o.Record = true
		r, err := pipesim.Simulate(p.su, p.o)
		if err != nil {
			return err
		}
		d, err := plot.SimulationOf(r, p.show)
		if err != nil {
			return err
		}
		f, err := plot.Pipeline(d)
		if err != nil {
			return err
		}
		if err := f.Save(filepath.Join(dir, p.file)); err != nil {
			return err
		}
	}
	r, err := pipesim.Simulate(linked, pipesim.Options{Schedule: pipesim.OneFOneBFlush, Microbatches: 4, Minibatches: 2, Record: true})
	if err != nil {
		return err
	}
	b, err := pipesim.ChromeTrace(r)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "pipesim-trace-example.json"), append(b, '\n'), 0o644)
}
