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
	plan, err := planChain(tinyChain, `{"algo": "rotor", "budget_bytes": 24, "slots": 24}`)
	if err != nil {
		t.Fatal(err)
	}
	svg, err := PlotFrontier(callOf(chainSource(tinyChain), `{"plan": `+plan+`, "title": "two"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(svg, "<?xml") || !strings.Contains(svg, ">two<") || !strings.Contains(svg, ">rotor at 24 B<") {
		t.Fatalf("frontier SVG lacks its title or mark:\n%.300s", svg)
	}
	svg, err = PlotTimeline(callOf(chainSource(tinyChain), `{"plan": `+plan+`, "measured_peak_bytes": 26}`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(svg, ">measured peak 26 B<") {
		t.Fatalf("timeline SVG lacks the measured peak:\n%.300s", svg)
	}
}

func TestPlotBadInput(t *testing.T) {
	for name, call := range map[string]func() (string, error){
		"unknown option": func() (string, error) { return PlotFrontier(callOf(chainSource(tinyChain), `{"budget": 3}`)) },
		"bad chain":      func() (string, error) { return PlotFrontier(callOf(chainSource(`{}`), `{}`)) },
		"bad plan": func() (string, error) {
			return PlotTimeline(callOf(chainSource(tinyChain), `{"plan": {"sequence": [{"op": "X", "stage": 1}]}}`))
		},
		"no database":    func() (string, error) { return PlotStoredTimeline(dbOf(t.TempDir()+"/none.db"), 1) },
		"no pipeline db": func() (string, error) { return PlotStoredPipeline(dbOf(t.TempDir()+"/none.db"), 1, 2) },
	} {
		if _, err := call(); err == nil || !strings.HasPrefix(err.Error(), "chainplan[") {
			t.Errorf("%s: got %v, want a coded error", name, err)
		}
	}
}

func TestPlotPipeline(t *testing.T) {
	doc := `{"format": "chainplan.pipeline/v1", "algo": "contiguous", "gpus": 2, "memory_bytes": 1000,
 "bandwidth": 100, "weight_copies": 2, "activation_model": "saved", "period": 4,
 "stages": [{"first": 1, "last": 1, "gpu": 0}, {"first": 2, "last": 2, "gpu": 1}],
 "pattern": [{"op": "F", "stage": 0, "start": 0, "duration": 1, "shift": 0},
             {"op": "CF", "stage": 0, "start": 1, "duration": 0.5, "shift": 0},
             {"op": "F", "stage": 1, "start": 1.5, "duration": 1, "shift": 0},
             {"op": "B", "stage": 1, "start": 2.5, "duration": 1, "shift": 0},
             {"op": "CB", "stage": 0, "start": 3.5, "duration": 0.5, "shift": 0},
             {"op": "B", "stage": 0, "start": 0, "duration": 1, "shift": 1}],
 "memory_per_gpu": [500, 400], "contiguous": true}`
	svg, err := PlotPipeline(doc, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{">device 1<", ">link 0-1<", ">F1<"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the Gantt chart lacks %s", want)
		}
	}
	if _, err := PlotPipeline(`{"algo": "rotor"}`, 0); err == nil || !strings.HasPrefix(err.Error(), "chainplan[invalid-plan]") {
		t.Errorf("a schedule: got %v, want an invalid-plan error", err)
	}
}
