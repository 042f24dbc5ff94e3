package pipesim

import (
	"testing"

	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/internal/pipechains"
	"github.com/chainplan/chainplan/planner/pipeline"
)

// TestTransientBytes checks that the bytes an operation holds while it runs (Problem.Cost's
// FwdExtra and BwdExtra; none in today's model, so they are set here) count on its device
// while it runs and only then: under GPipe a stage holds N·ā when its last forward runs
// and its first backward starts (1F1B: S−s micro-batches), so its device peaks at that
// plus the larger transient; the stage's activations do not include them.
func TestTransientBytes(t *testing.T) {
	f, b := []float64{1, 2, 1}, []float64{2, 3, 2}
	a := []int64{10, 20, 30, 40}
	c := pipechains.Chain(f, b, nil, a)
	pr, err := pipeline.NewProblem(c, pipeplan.Options{GPUs: 3, Bandwidth: 1, WeightCopies: 1})
	if err != nil {
		t.Fatal(err)
	}
	stages := []pipeplan.Stage{{First: 1, Last: 1, GPU: 0}, {First: 2, Last: 2, GPU: 1}, {First: 3, Last: 3, GPU: 2}}
	su, err := NewSetup(pr, stages, SetupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 4
	fExtra, bExtra := []int64{500, 7, 0}, []int64{3, 900, 0}
	for _, sched := range []Schedule{GPipe, OneFOneBFlush} {
		o, err := Options{Schedule: sched, Microbatches: n, Minibatches: 2}.check(su)
		if err != nil {
			t.Fatal(err)
		}
		s, err := newSim(su, o)
		if err != nil {
			t.Fatal(err)
		}
		copy(s.fExtra, fExtra)
		copy(s.bExtra, bExtra)
		if err := s.run(); err != nil {
			t.Fatal(err)
		}
		r := s.result()
		for st, x := range r.PerStage {
			d := r.PerDevice[st]
			held := int64(x.PeakInflight) * x.StoredBytes
			if x.PeakActivationBytes != held {
				t.Errorf("%s stage %d: activations %d, want %d (transients are not activations)", sched, st, x.PeakActivationBytes, held)
			}
			// Both a forward and a backward of the stage start with the most micro-batches
			// in flight held (the backward's own included), under both schedules.
			want := held + max(fExtra[st], bExtra[st])
			if got := d.PeakBytes - d.StaticBytes; got != want {
				t.Errorf("%s device %d: %d bytes above static at the peak, want %d", sched, st, got, want)
			}
		}
		if r.PerStage[0].PeakInflight != map[Schedule]int{GPipe: n, OneFOneBFlush: 3}[sched] {
			t.Errorf("%s: %d micro-batches in flight at stage 0", sched, r.PerStage[0].PeakInflight)
		}
	}
}
