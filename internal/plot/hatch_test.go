package plot

import (
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/pipeline"
	"github.com/chainplan/chainplan/planner/pipesim"
)

// hatchedPicture draws d and returns the SVG read back.
func hatchedPicture(t *testing.T, d *PipelineData) *svgDoc {
	t.Helper()
	f, err := Pipeline(d)
	if err != nil {
		t.Fatal(err)
	}
	svg, err := f.SVG()
	if err != nil {
		t.Fatal(err)
	}
	return parseSVG(t, svg)
}

// TestPipelineShowsRecomputation: the backward of a stage that recomputes is hatched and
// the legend says what the stripes are; a plan without recomputation has neither.
func TestPipelineShowsRecomputation(t *testing.T) {
	pp, err := pipeplan.Parse([]byte(threeStages))
	if err != nil {
		t.Fatal(err)
	}
	d, err := PipelineOf(pp, 2)
	if err != nil {
		t.Fatal(err)
	}
	plain := hatchedPicture(t, d)
	if plain.hasText(recomputeLegend) || len(plain.strokes(colorHex(colorHatch))) != 0 || d.Recomputes() {
		t.Fatal("a plan without recomputation is drawn with hatching")
	}
	pp.Stages[1].Recompute = &pipeplan.Recompute{BudgetBytes: 1 << 20}
	if d, err = PipelineOf(pp, 2); err != nil {
		t.Fatal(err)
	}
	for _, l := range d.Spans {
		for _, s := range l {
			if want := s.Kind == "B" && s.Stage == 1; s.Recompute != want {
				t.Errorf("span %s of stage %d: recompute %v, want %v", s.Label, s.Stage, s.Recompute, want)
			}
		}
	}
	doc := hatchedPicture(t, d)
	if !doc.hasText(recomputeLegend) {
		t.Errorf("no legend entry %q", recomputeLegend)
	}
	// Stripes on the two periods' B of stage 1 and on the legend's icon.
	if n := len(doc.strokes(colorHex(colorHatch))); n < 3 {
		t.Errorf("%d hatch stripes, want some on each recomputing box and the legend's", n)
	}
}

// TestSimulationShowsRecomputation: a simulated checkpointed stage's recomputation (R) is
// hatched, the other tasks are not.
func TestSimulationShowsRecomputation(t *testing.T) {
	c := &chainplan.Chain{Format: chainplan.ChainFormat, InputBytes: 8, Stages: []chainplan.Stage{
		{FwdTime: 1, BwdTime: 2, OutBytes: 4, SavedBytes: 4, ParamBytes: 5},
		{FwdTime: 2, BwdTime: 3, OutBytes: 4, SavedBytes: 4, ParamBytes: 5},
	}}
	pr, err := pipeline.NewProblem(c, pipeplan.Options{GPUs: 2, Bandwidth: 8, MemoryBytes: 100})
	if err != nil {
		t.Fatal(err)
	}
	stages := []pipeplan.Stage{{First: 1, Last: 1, GPU: 0}, {First: 2, Last: 2, GPU: 1}}
	su, err := pipesim.NewSetup(pr, stages, pipesim.SetupOptions{Checkpointed: []int{0}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := pipesim.Simulate(su, pipesim.Options{Schedule: pipesim.OneFOneBFlush, Microbatches: 2, Minibatches: 2, Record: true})
	if err != nil {
		t.Fatal(err)
	}
	d, err := SimulationOf(r, 2)
	if err != nil {
		t.Fatal(err)
	}
	hatched := 0
	for _, l := range d.Spans {
		for _, s := range l {
			if s.Recompute != (s.Kind == "R") {
				t.Errorf("span %s: recompute %v", s.Label, s.Recompute)
			}
			if s.Recompute {
				hatched++
			}
		}
	}
	if hatched == 0 || !hatchedPicture(t, d).hasText(recomputeLegend) {
		t.Fatalf("%d hatched spans; want the checkpointed stage's recomputations, with the legend's entry", hatched)
	}
}
