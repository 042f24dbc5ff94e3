package plot

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/pipeplan"
)

// threeStages is a pipeline plan of three stages on three devices (DESIGN.md's contract).
const threeStages = `{"format": "chainplan.pipeline/v1", "algo": "madpipe", "gpus": 3, "memory_bytes": 8e9,
 "bandwidth": 1.2e10, "weight_copies": 3, "activation_model": "saved", "period": 0.41,
 "stages": [{"first": 1, "last": 9, "gpu": 0}, {"first": 10, "last": 17, "gpu": 1}, {"first": 18, "last": 20, "gpu": 2}],
 "pattern": [{"op": "F", "stage": 0, "start": 0.0, "duration": 0.08, "shift": 0},
             {"op": "CF", "stage": 0, "start": 0.08, "duration": 0.02, "shift": 0},
             {"op": "F", "stage": 1, "start": 0.10, "duration": 0.07, "shift": 0},
             {"op": "CF", "stage": 1, "start": 0.17, "duration": 0.02, "shift": 0},
             {"op": "F", "stage": 2, "start": 0.19, "duration": 0.05, "shift": 0},
             {"op": "B", "stage": 2, "start": 0.24, "duration": 0.1, "shift": 0},
             {"op": "CB", "stage": 1, "start": 0.34, "duration": 0.02, "shift": 0},
             {"op": "B", "stage": 1, "start": 0.36, "duration": 0.04, "shift": 0},
             {"op": "CB", "stage": 0, "start": 0.0, "duration": 0.02, "shift": 1},
             {"op": "B", "stage": 0, "start": 0.11, "duration": 0.16, "shift": 1}],
 "memory_per_gpu": [7.1e9, 6.9e9, 5e9], "contiguous": true}`

// TestPipelineStructure reads the Gantt chart back: one lane per device and per link,
// periods × |pattern| boxes in the stages' shades, mini-batch labels starting at 0, one
// memory bar per device and the limit line.
func TestPipelineStructure(t *testing.T) {
	pp, err := pipeplan.Parse([]byte(threeStages))
	if err != nil {
		t.Fatal(err)
	}
	d, err := PipelineOf(pp, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := d.Lanes, []string{"device 0", "device 1", "device 2", "link 0-1", "link 1-2"}; !slices.Equal(got, want) {
		t.Fatalf("lanes %v, want %v", got, want)
	}
	d.SetDeviceKind(DeviceKindOf("cpu"))
	f, err := Pipeline(d)
	if err != nil {
		t.Fatal(err)
	}
	svg, _ := f.SVG()
	doc := parseSVG(t, svg)
	if !slices.ContainsFunc(doc.texts, func(t svgText) bool { return strings.HasSuffix(t.text, "F3, B3: forward and backward of mini-batch 3") }) {
		t.Error("the time axis does not say that the numbers are mini-batches")
	}
	for _, s := range []string{"CPU 0", "CPU 1", "CPU 2", "link 0-1", "link 1-2", "stage 0", "stage 2", "limit 7.45 GiB"} {
		if !doc.hasText(s) {
			t.Errorf("no text %q", s)
		}
	}
	boxes := 0
	for k := range 3 {
		boxes += len(doc.fills(colorHex(stageShade(Span{Kind: "F", Stage: k}))))
		// The dark shade is also the stage's legend swatch.
		boxes += len(doc.fills(colorHex(stageShade(Span{Kind: "B", Stage: k})))) - 1
	}
	if want := 2 * 10; boxes != want {
		t.Errorf("%d boxes, want %d (2 periods of 10 operations)", boxes, want)
	}
	// B of stage 0 has shift 1: mini-batch 0 in the first period, the others start at 1.
	for _, s := range []string{"B0", "F1", "F2", "B1"} {
		if !doc.hasText(s) {
			t.Errorf("no label %q", s)
		}
	}
	if doc.hasText("F0") || doc.hasText("F3") {
		t.Error("forward labels outside mini-batches 1..2")
	}
	if got := len(doc.fills(colorHex(colorBars))); got != 3+1 {
		t.Errorf("%d memory bars, want 3 and the legend's", got)
	}
	if doc.hasText("GPU 0") || doc.hasText("measured peak") {
		t.Error("a CPU plan's lanes named GPU, or a measured peak drawn for a plan that did not run")
	}
	// With the runner's measurements: a measured bar beside each predicted one.
	d.MeasuredBytes = []int64{7.3e9, 6.5e9, 5.1e9}
	f, err = Pipeline(d)
	if err != nil {
		t.Fatal(err)
	}
	svg, _ = f.SVG()
	doc = parseSVG(t, svg)
	if got := len(doc.fills(colorHex(colorRanBar))); got != 3+1 || !doc.hasText("measured peak") {
		t.Errorf("%d measured bars, want 3 and the legend's", got)
	}
}

func TestPipelineOfBadInput(t *testing.T) {
	good := func() *pipeplan.Plan {
		p, err := pipeplan.Parse([]byte(threeStages))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for name, spoil := range map[string]func(p *pipeplan.Plan){
		"no stages":  func(p *pipeplan.Plan) { p.Stages = nil },
		"bad gpu":    func(p *pipeplan.Plan) { p.Stages[1].GPU = 7 },
		"bad stage":  func(p *pipeplan.Plan) { p.Pattern[0].Stage = 5 },
		"last send":  func(p *pipeplan.Plan) { p.Pattern[1].Stage = 2 },
		"bad period": func(p *pipeplan.Plan) { p.Period = 0 },
	} {
		p := good()
		spoil(p)
		if _, err := PipelineOf(p, 0); !errors.Is(err, chainplan.ErrInvalidPlan) {
			t.Errorf("%s: got %v, want ErrInvalidPlan", name, err)
		}
	}
}
