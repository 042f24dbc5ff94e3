package pipeline_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/internal/pipechains"
	"github.com/chainplan/chainplan/planner/pipeline"
)

// TestNewProblemErrors: bad input gets an error naming the field.
func TestNewProblemErrors(t *testing.T) {
	ok := pipeplan.Options{GPUs: 2, MemoryBytes: 100, Bandwidth: 1}
	chain := func() *chainplan.Chain { return pipechains.Costs(1, 2, 1) }
	cases := []struct {
		name  string
		chain *chainplan.Chain
		opts  func(o *pipeplan.Options)
		field string
	}{
		{"P=0", chain(), func(o *pipeplan.Options) { o.GPUs = 0 }, "gpus"},
		{"P too large", chain(), func(o *pipeplan.Options) { o.GPUs = pipeplan.MaxGPUs + 1 }, "gpus"},
		{"negative memory", chain(), func(o *pipeplan.Options) { o.MemoryBytes = -1 }, "memory"},
		{"zero bandwidth", chain(), func(o *pipeplan.Options) { o.Bandwidth = 0 }, "bandwidth"},
		{"NaN bandwidth", chain(), func(o *pipeplan.Options) { o.Bandwidth = math.NaN() }, "bandwidth"},
		{"infinite bandwidth", chain(), func(o *pipeplan.Options) { o.Bandwidth = math.Inf(1) }, "bandwidth"},
		{"copies", chain(), func(o *pipeplan.Options) { o.WeightCopies = -3 }, "weight_copies"},
		{"model", chain(), func(o *pipeplan.Options) { o.ActivationModel = "all" }, "activation_model"},
		{"headroom", chain(), func(o *pipeplan.Options) { o.Headroom = 1 }, "headroom"},
		{"negative headroom", chain(), func(o *pipeplan.Options) { o.Headroom = -.1 }, "headroom"},
		{"no layers", &chainplan.Chain{Format: chainplan.ChainFormat}, nil, "stages"},
		{"no chain", nil, nil, "stages"},
		{"NaN time", func() *chainplan.Chain { c := chain(); c.Stages[1].FwdTime = math.NaN(); return c }(), nil, "fwd_time"},
		{"negative weights", func() *chainplan.Chain { c := chain(); c.Stages[0].ParamBytes = -1; return c }(), nil, "param_bytes"},
		{"huge", func() *chainplan.Chain {
			c := chain()
			for i := range c.Stages {
				c.Stages[i].ParamBytes = 1 << 49
			}
			return c
		}(), nil, "param_bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := ok
			if tc.opts != nil {
				tc.opts(&o)
			}
			_, err := pipeline.NewProblem(tc.chain, o)
			var oe *pipeplan.OptionError
			var ce *chainplan.ChainError
			switch {
			case errors.As(err, &oe):
				if oe.Field != tc.field || !errors.Is(err, chainplan.ErrUnsupported) {
					t.Errorf("%v: field %q, want %q", err, oe.Field, tc.field)
				}
			case errors.As(err, &ce):
				if ce.Field != tc.field {
					t.Errorf("%v: field %q, want %q", err, ce.Field, tc.field)
				}
			default:
				t.Errorf("err = %v, want an error naming %q", err, tc.field)
			}
		})
	}
}

// TestModel checks the model's sums on a small chain by hand (spec §1.5).
func TestModel(t *testing.T) {
	c := &chainplan.Chain{Format: chainplan.ChainFormat, InputBytes: 10, Stages: []chainplan.Stage{
		{FwdTime: 1, BwdTime: 2, OutBytes: 4, SavedBytes: 6, ParamBytes: 100, FwdTmpBytes: 1, BwdTmpBytes: 2},
		{FwdTime: 3, BwdTime: 4, OutBytes: 5, SavedBytes: 9, ParamBytes: 200, FwdTmpBytes: 3, BwdTmpBytes: 1},
		{FwdTime: 5, BwdTime: 6, OutBytes: 7, SavedBytes: 7, ParamBytes: 300, FwdTmpBytes: 2, BwdTmpBytes: 4},
	}, Loss: chainplan.Loss{FwdTime: .5, BwdTime: .25, FwdTmpBytes: 8, BwdTmpBytes: 6}}
	// The paper's model (no temporaries), with its three weight copies.
	saved, err := pipeline.NewProblem(c, pipeplan.Options{GPUs: 2, MemoryBytes: 1, Bandwidth: 2,
		WeightCopies: 3, NoTemporaries: true})
	if err != nil {
		t.Fatal(err)
	}
	input, err := pipeline.NewProblem(c, pipeplan.Options{GPUs: 2, MemoryBytes: 1, Bandwidth: 2,
		WeightCopies: 2, ActivationModel: pipeplan.ActivationsInput, NoTemporaries: true})
	if err != nil {
		t.Fatal(err)
	}
	// The defaults: two copies, the saved model, temporaries counted.
	tmp, err := pipeline.NewProblem(c, pipeplan.Options{GPUs: 2, MemoryBytes: 1000, Bandwidth: 2, Headroom: .25})
	if err != nil {
		t.Fatal(err)
	}
	fwd23, bwd23 := tmp.Transients(2, 3)
	fwd11, bwd11 := tmp.Transients(1, 1)
	checks := []struct {
		name      string
		got, want float64
	}{
		{"UF(2,3) with the loss folded into layer 3", saved.UF(2, 3), 8.5},
		{"UB(1,3)", saved.UB(1, 3), 12.25},
		{"TotalWork", saved.TotalWork(), 21.75},
		{"Transfer(1) = a_1/β", saved.Transfer(1), 2},
		{"Transfer(3): the chain end", saved.Transfer(3), 0},
		{"Comm(2) = 2a_2/β", saved.Comm(2), 5},
		// saved: a_1 + saved_2 + saved_3 = 4 + 9 + 7; input: a_1 + a_2 = 4 + 5.
		{"Stored(2,3) saved", float64(saved.Stored(2, 3)), 20},
		{"Stored(2,3) input", float64(input.Stored(2, 3)), 9},
		{"Buffers(2,2) = 2a_1 + 2a_2", float64(saved.Buffers(2, 2)), 18},
		{"Buffers(1,3)", float64(saved.Buffers(1, 3)), 0},
		// 3·200 + 2·(a_1 + saved_2) + 18.
		{"StageMemory(2,2,2)", float64(saved.StageMemory(2, 2, 2)), 600 + 26 + 18},
		{"StageMemory(1,1,1) input, 2 copies", float64(input.StageMemory(1, 1, 1)), 200 + 10 + 8},
		{"MemoryLowerBound saved: 3·300 + 7", float64(pipeline.MemoryLowerBound(saved)), 907},
		// With temporaries: the loss keeps o_F(loss) = 8 on the last stage.
		{"Stored(2,3) with the loss", float64(tmp.Stored(2, 3)), 28},
		{"forward transient of (2,3): max o_F", float64(fwd23), 3},
		// max(a_3 + a_2 + o_B(3), a_2 + a_1 + o_B(2), a_3 + o_B(loss)) = max(16, 10, 13).
		{"backward transient of (2,3)", float64(bwd23), 16},
		{"forward transient of (1,1)", float64(fwd11), 1},
		// a_1 + o_B(1): the chain input has no gradient.
		{"backward transient of (1,1)", float64(bwd11), 6},
		// 2·500 + 2a_1 + 2·28 + 16.
		{"StageMemory(2,3,2) with temporaries", float64(tmp.StageMemory(2, 3, 2)), 1000 + 8 + 56 + 16},
		// Layer 3: 2·300 + 7 + 8 + max(o_F = 2, a_3 + o_B + a_2 = 16, a_3 + o_B(loss) = 13).
		{"MemoryLowerBound with temporaries", float64(pipeline.MemoryLowerBound(tmp)), 631},
		{"Limit with a quarter of headroom", float64(tmp.Limit()), 750},
		{"MemoryFor(750)", float64(tmp.MemoryFor(750)), 1000},
		{"MemoryFor(751)", float64(tmp.MemoryFor(751)), 1002},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %g, want %g", c.name, c.got, c.want)
		}
	}
	if o := tmp.Options(); o.WeightCopies != 2 ||
		o.ActivationModel != pipeplan.ActivationsSaved || o.NoTemporaries || o.Checkpoint {
		t.Errorf("defaults: %+v", o)
	}
	if m := saved.WithMemory(5).Options().MemoryBytes; m != 5 || saved.Options().MemoryBytes != 1 {
		t.Errorf("WithMemory changed the original or did not apply")
	}
	if !strings.Contains((&pipeplan.InfeasibleError{Algo: "x", MemoryBytes: 5, MinMemoryBytes: 2048}).Error(), "smallest memory per device that fits is 2048 B (2.00 KiB)") {
		t.Error("InfeasibleError message")
	}
}

// TestModelExact: with the exact memory model (chainplan.chain/v2) a stage does not keep
// the output of an inner layer that neither it nor the next layer saved; its own output
// stays, and a version 1 reading of the chain keeps everything.
func TestModelExact(t *testing.T) {
	c := &chainplan.Chain{Format: chainplan.ChainFormatV2, InputBytes: 10, Stages: []chainplan.Stage{
		{FwdTime: 1, BwdTime: 2, OutBytes: 4, SavedBytes: 6, SavesOutput: chainplan.Bool(false)},
		{FwdTime: 3, BwdTime: 4, OutBytes: 5, SavedBytes: 9, SavesInput: chainplan.Bool(false)},
		{FwdTime: 5, BwdTime: 6, OutBytes: 7, SavedBytes: 7},
	}}
	opts := pipeplan.Options{GPUs: 2, MemoryBytes: 1, Bandwidth: 2}
	exact, err := pipeline.NewProblem(c, opts)
	if err != nil {
		t.Fatal(err)
	}
	v1, err := pipeline.NewProblem(c.Conservative(), opts)
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want int64
	}{
		{"Stored(1,3): a_0 + saved_1 − a_1 + saved_2 + saved_3", exact.Stored(1, 3), 10 + 6 - 4 + 9 + 7},
		{"Stored(1,1): the stage's own output stays", exact.Stored(1, 1), 10 + 6},
		{"Stored(2,3)", exact.Stored(2, 3), 4 + 9 + 7},
		{"Stored(1,3) version 1", v1.Stored(1, 3), 10 + 6 + 9 + 7},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
}
