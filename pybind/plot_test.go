package pybind

import (
	"strings"
	"testing"
)

// tinyChain is a two-stage chain.
const tinyChain = `{"format": "chainplan.chain/v1", "input_bytes": 4, "stages": [
 {"name": "a", "fwd_time": 1, "bwd_time": 2, "out_bytes": 4, "saved_bytes": 8, "fwd_tmp_bytes": 0, "bwd_tmp_bytes": 0},
 {"name": "b", "fwd_time": 1, "bwd_time": 2, "out_bytes": 4, "saved_bytes": 8, "fwd_tmp_bytes": 0, "bwd_tmp_bytes": 0}]}`

func TestPlotFrontierAndTimeline(t *testing.T) {
	plan, err := Solve(tinyChain, `{"algo": "rotor", "budget_bytes": 24, "slots": 24}`)
	if err != nil {
		t.Fatal(err)
	}
	svg, err := PlotFrontier(tinyChain, `{"plan": `+plan+`, "title": "two"}`)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(svg, "<?xml") || !strings.Contains(svg, ">two<") || !strings.Contains(svg, ">rotor at 24 B<") {
		t.Fatalf("frontier SVG lacks its title or mark:\n%.300s", svg)
	}
	svg, err = PlotTimeline(tinyChain, plan, 26)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(svg, ">measured peak 26 B<") {
		t.Fatalf("timeline SVG lacks the measured peak:\n%.300s", svg)
	}
}

func TestPlotBadInput(t *testing.T) {
	for name, call := range map[string]func() (string, error){
		"unknown option": func() (string, error) { return PlotFrontier(tinyChain, `{"budget": 3}`) },
		"bad chain":      func() (string, error) { return PlotFrontier(`{}`, `{}`) },
		"bad plan":       func() (string, error) { return PlotTimeline(tinyChain, `{"sequence": [{"op": "X", "stage": 1}]}`, 0) },
		"no database":    func() (string, error) { return PlotStoredTimeline(t.TempDir()+"/none.db", 1) },
	} {
		if _, err := call(); err == nil || !strings.HasPrefix(err.Error(), "chainplan[") {
			t.Errorf("%s: got %v, want a coded error", name, err)
		}
	}
}
