package plot

import (
	"errors"
	"testing"

	"github.com/chainplan/chainplan"
)

// TestHistoryStructure reads back one marker per plan and panel, by algorithm, and the
// plan ids as labels.
func TestHistoryStructure(t *testing.T) {
	d := &HistoryData{Title: "run 3", Outcomes: []Outcome{
		{PlanID: 1, Algo: "rotor", PredictedPeak: 30 << 20, MeasuredPeak: 32 << 20, PredictedTime: 0.1, MeasuredTime: 0.12},
		{PlanID: 2, Algo: "rotor", PredictedPeak: 50 << 20, MeasuredPeak: 51 << 20, PredictedTime: 0.08, MeasuredTime: 0.085},
		{PlanID: 7, Algo: "pofo", PredictedPeak: 40 << 20, MeasuredPeak: 44 << 20, PredictedTime: 0.09, MeasuredTime: 0.1},
	}}
	f, err := History(d)
	if err != nil {
		t.Fatal(err)
	}
	svg, _ := f.SVG()
	doc := parseSVG(t, svg)
	// Each panel draws each marker and one legend marker per algorithm.
	if got := len(doc.fills(hex("rotor"))); got != 2*(2+1) {
		t.Errorf("%d rotor markers, want 6", got)
	}
	for _, s := range []string{"run 3", "#1", "#2", "#7", "measured peak memory (MiB)", "predicted step time (ms)"} {
		if !doc.hasText(s) {
			t.Errorf("no text %q", s)
		}
	}
	if _, err := History(&HistoryData{}); !errors.Is(err, chainplan.ErrUnsupported) {
		t.Fatalf("empty history: got %v, want ErrUnsupported", err)
	}
}

// TestHistoryPipelineUnits: pipeline plans are compared per mini-batch (their period
// against the measured time between micro-batches) and by their busiest device, and the
// axes say so, alone or mixed with checkpointing plans.
func TestHistoryPipelineUnits(t *testing.T) {
	pipe := Outcome{PlanID: 3, Algo: "contiguous", PredictedPeak: 9 << 20, MeasuredPeak: 9 << 20,
		PredictedTime: 0.0115, MeasuredTime: 0.013, Pipeline: true}
	rotor := Outcome{PlanID: 4, Algo: "rotor", PredictedPeak: 30 << 20, MeasuredPeak: 31 << 20, PredictedTime: 0.1, MeasuredTime: 0.1}
	for _, tc := range []struct {
		outs       []Outcome
		time, peak string
	}{
		{[]Outcome{pipe}, "predicted time per mini-batch (ms)", "predicted peak memory (pipelines: busiest device) (MiB)"},
		{[]Outcome{pipe, rotor}, "predicted step time (pipelines: per mini-batch) (ms)", "measured peak memory (pipelines: busiest device) (MiB)"},
	} {
		f, err := History(&HistoryData{Title: "run 1", Outcomes: tc.outs})
		if err != nil {
			t.Fatal(err)
		}
		svg, _ := f.SVG()
		doc := parseSVG(t, svg)
		for _, s := range []string{tc.time, tc.peak} {
			if !doc.hasText(s) {
				t.Errorf("%d plans: no text %q", len(tc.outs), s)
			}
		}
		if doc.hasText("predicted step time (ms)") {
			t.Errorf("%d plans: a pipeline's period labelled a step time", len(tc.outs))
		}
	}
}
