package pipesim_test

import (
	"testing"

	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/internal/pipechains"
	"github.com/chainplan/chainplan/planner/pipeline"
	"github.com/chainplan/chainplan/planner/pipesim"
)

// stagesOf returns one stage per layer, stage k on device k.
func stagesOf(layers int) []pipeplan.Stage {
	out := make([]pipeplan.Stage, layers)
	for k := range out {
		out[k] = pipeplan.Stage{First: k + 1, Last: k + 1, GPU: k}
	}
	return out
}

// mustSetup builds the setup of a chain whose layer k is stage k: forward f[k], backward
// b[k], output a[k+1] bytes (a[0] the input; nil: none), links at bandwidth bw when
// positive.
func mustSetup(tb testing.TB, f, b []float64, a []int64, bw float64, opts pipesim.SetupOptions) *pipesim.Setup {
	tb.Helper()
	c := pipechains.Chain(f, b, nil, a)
	beta := bw
	if beta <= 0 {
		beta = 1
	}
	pr, err := pipeline.NewProblem(c, pipeplan.Options{GPUs: len(f), Bandwidth: beta, WeightCopies: 2})
	if err != nil {
		tb.Fatal(err)
	}
	opts.Links = opts.Links || bw > 0
	su, err := pipesim.NewSetup(pr, stagesOf(len(f)), opts)
	if err != nil {
		tb.Fatal(err)
	}
	return su
}

// unitSetup is a setup of w stages for unit-time runs.
func unitSetup(tb testing.TB, w int) *pipesim.Setup {
	tb.Helper()
	f := make([]float64, w)
	for i := range f {
		f[i] = 1
	}
	return mustSetup(tb, f, f, nil, 0, pipesim.SetupOptions{})
}

func mustSimulate(tb testing.TB, su *pipesim.Setup, o pipesim.Options) *pipesim.Result {
	tb.Helper()
	r, err := pipesim.Simulate(su, o)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}
