package plot

import (
	"errors"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/pipeline"
	"github.com/chainplan/chainplan/planner/pipesim"
)

// TestSimulationPicture draws a recorded 1F1B-flush simulation with the pipeline picture:
// one lane per device and link, every task of the first two mini-batches as a box in its
// stage's shades, the labels of micro-batches.
func TestSimulationPicture(t *testing.T) {
	c := &chainplan.Chain{Format: chainplan.ChainFormat, InputBytes: 8, Stages: []chainplan.Stage{
		{FwdTime: 1, BwdTime: 2, OutBytes: 4, SavedBytes: 4, ParamBytes: 5},
		{FwdTime: 2, BwdTime: 3, OutBytes: 4, SavedBytes: 4, ParamBytes: 5},
		{FwdTime: 1, BwdTime: 2, OutBytes: 4, SavedBytes: 4, ParamBytes: 5},
	}}
	pr, err := pipeline.NewProblem(c, pipeplan.Options{GPUs: 3, Bandwidth: 8, MemoryBytes: 100})
	if err != nil {
		t.Fatal(err)
	}
	stages := []pipeplan.Stage{{First: 1, Last: 1, GPU: 0}, {First: 2, Last: 2, GPU: 1}, {First: 3, Last: 3, GPU: 2}}
	su, err := pipesim.NewSetup(pr, stages, pipesim.SetupOptions{Links: true})
	if err != nil {
		t.Fatal(err)
	}
	r, err := pipesim.Simulate(su, pipesim.Options{Schedule: pipesim.OneFOneBFlush, Microbatches: 3, Minibatches: 4, Record: true})
	if err != nil {
		t.Fatal(err)
	}
	d, err := SimulationOf(r, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Lanes) != 3+4 || d.Lanes[3] != "link 0→1" || d.Periods != 2 {
		t.Fatalf("lanes %v, %d periods", d.Lanes, d.Periods)
	}
	f, err := Pipeline(d)
	if err != nil {
		t.Fatal(err)
	}
	svg, _ := f.SVG()
	doc := parseSVG(t, svg)
	for _, s := range []string{"device 0", "link 2→1", "stage 2", "F1.1", "limit 100 B"} {
		if !doc.hasText(s) {
			t.Errorf("no text %q", s)
		}
	}
	boxes := 0
	for k := range 3 {
		boxes += len(doc.fills(colorHex(stageShade(Span{Kind: "F", Stage: k}))))
		boxes += len(doc.fills(colorHex(stageShade(Span{Kind: "B", Stage: k})))) - 1 // the legend's swatch
	}
	if want := 2 * (3*2*3 + 2*2*3); boxes != want { // 2 mini-batches: F and B on 3 devices, CF and CB on 2 links, 3 micro-batches
		t.Errorf("%d boxes, want %d", boxes, want)
	}
	if _, err := SimulationOf(&pipesim.Result{}, 1); !errors.Is(err, chainplan.ErrUnsupported) {
		t.Errorf("a result without a timeline: %v", err)
	}
}
