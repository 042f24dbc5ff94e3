// Command frontier draws the promise benchmark's frontier: for each model, the measured
// activation peak (MiB) against the step time over the plain step, one line per system
// (plain, checkpoint_sequential or grouped blocks, per-block checkpointing, per-block SAC,
// chainplan, torch.compile, chainplan + compile), each line through the system's points in
// increasing memory. bench/promise/main.py writes the points and runs it:
//
//	go run ./bench/promise/frontier -in points.json -o docs/promise-frontier.svg
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"

	"github.com/chainplan/chainplan/internal/plot"
)

// input is what bench/promise/report.py writes: per model, per system, [peak bytes, time
// over the plain step] pairs.
type input struct {
	Panels []struct {
		Title  string                  `json:"title"`
		Series map[string][][2]float64 `json:"series"`
	} `json:"panels"`
}

// order is the legend's order of the systems; a system not named here (the alternatives
// given the fused head, bench/promise/report.py's FUSED; the large benchmark's variants)
// follows, in name order.
var order = []string{"plain", "checkpoint_sequential", "per-block", "per-block SAC", "chainplan",
	"torch.compile", "chainplan + compile"}

// names is order, then the panel's other systems sorted.
func names(series map[string][][2]float64) []string {
	known := map[string]bool{}
	for _, n := range order {
		known[n] = true
	}
	var rest []string
	for n := range series {
		if !known[n] {
			rest = append(rest, n)
		}
	}
	sort.Strings(rest)
	return append(append([]string{}, order...), rest...)
}

func main() {
	in := flag.String("in", "", "the points (JSON)")
	out := flag.String("o", "promise-frontier.svg", "the picture (.svg or .png)")
	flag.Parse()
	if err := run(*in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "frontier:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	data, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	var d input
	if err := json.Unmarshal(data, &d); err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	g := &plot.GridData{Title: "Measured activation memory against step time, every system",
		XLabel: "measured peak (MiB)", YLabel: "step time / plain step", Rows: len(d.Panels), Cols: 1}
	for _, p := range d.Panels {
		pn := plot.Panel{Title: p.Title}
		for _, name := range names(p.Series) {
			pts := p.Series[name]
			if len(pts) == 0 {
				continue
			}
			sort.Slice(pts, func(i, j int) bool { return pts[i][0] < pts[j][0] })
			s := plot.Series{Name: name}
			for _, q := range pts {
				s.Points = append(s.Points, plot.Point{Bytes: q[0] / (1 << 20), Makespan: q[1]})
			}
			pn.Series = append(pn.Series, s)
		}
		g.Panels = append(g.Panels, pn)
	}
	f, err := plot.Grid(g)
	if err != nil {
		return err
	}
	return f.Save(out)
}
