package pipeline_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/pipeline"
)

// nonContiguous is the period-2 plan of anchor A1 (costs 1, 2, 1 on P = 2, T:l.2632):
// layers 1 and 3 on device 0, layer 2 on device 1. Outputs are 0 bytes (no transfer time)
// and the saved bytes 3, 5, 7 (saved model), so only stored activations count. Device 0
// runs F0 B0 F2 B2 back to back: stage 0 keeps 4 mini-batches from its forward to the end
// of its backward, stage 2 one, and their peaks do not coincide (spec §2.5, best case).
func nonContiguous(tb testing.TB) (*pipeline.Problem, *pipeplan.Plan) {
	tb.Helper()
	c := &chainplan.Chain{Format: chainplan.ChainFormat, Stages: []chainplan.Stage{
		{FwdTime: .5, BwdTime: .5, SavedBytes: 3},
		{FwdTime: 1, BwdTime: 1, SavedBytes: 5},
		{FwdTime: .5, BwdTime: .5, SavedBytes: 7},
	}}
	pr, err := pipeline.NewProblem(c, pipeplan.Options{GPUs: 2, MemoryBytes: 16, Bandwidth: 1, WeightCopies: 3})
	if err != nil {
		tb.Fatal(err)
	}
	op := func(kind pipeplan.OpKind, k int, start, d float64, shift int) pipeplan.Op {
		return pipeplan.Op{Op: kind, Stage: k, Start: start, Duration: d, Shift: shift}
	}
	p := &pipeplan.Plan{Format: pipeplan.Format, Algo: "hand", GPUs: 2, MemoryBytes: 16, Bandwidth: 1,
		WeightCopies: 3, ActivationModel: pipeplan.ActivationsSaved, Period: 2, Temporaries: true,
		Stages: []pipeplan.Stage{{First: 1, Last: 1, GPU: 0}, {First: 2, Last: 2, GPU: 1}, {First: 3, Last: 3, GPU: 0}},
		Pattern: []pipeplan.Op{
			op(pipeplan.F, 0, 0, .5, 0), op(pipeplan.CF, 0, .5, 0, 0), op(pipeplan.F, 1, .5, 1, 0),
			op(pipeplan.CF, 1, 1.5, 0, 0), op(pipeplan.F, 2, 1, .5, 1), op(pipeplan.B, 2, 1.5, .5, 1),
			op(pipeplan.CB, 1, 0, 0, 2), op(pipeplan.B, 1, 1.5, 1, 2), op(pipeplan.CB, 0, .5, 0, 3),
			op(pipeplan.B, 0, .5, .5, 3),
		},
		MemoryPerGPU: []int64{16, 15}}
	return pr, p
}

func TestValidateNonContiguous(t *testing.T) {
	pr, p := nonContiguous(t)
	rep := pipeline.Validate(pr, p)
	if !rep.Valid {
		t.Fatalf("invalid: %v", rep.Issues)
	}
	if got, want := rep.NCA, []int{4, 3, 1}; !slices.Equal(got, want) {
		t.Errorf("NCA = %v, want %v", got, want)
	}
	// Device 0: 4·3 + 1·7 = 19 in the NCA model; the peak is 3·3 + 7 = 16 at F2's start.
	if got, want := rep.MemoryNCA, []int64{19, 15}; !slices.Equal(got, want) {
		t.Errorf("NCA memory = %v, want %v", got, want)
	}
	if got, want := rep.MemoryPeak, []int64{16, 15}; !slices.Equal(got, want) {
		t.Errorf("peak memory = %v, want %v", got, want)
	}
	if rep.LoadBound != 2 || rep.Speedup != 2 {
		t.Errorf("load bound %g, speedup %g, want 2 and 2", rep.LoadBound, rep.Speedup)
	}
	if err := pipeline.Check(pr.WithMemory(15), p); err == nil || !strings.Contains(err.Error(), "gpu 0: needs 16 bytes") {
		t.Errorf("M = 15: %v, want gpu 0 over the memory", err)
	}
}

// TestValidateCatches breaks the valid plan of nonContiguous one way at a time; the
// validator must name the problem.
func TestValidateCatches(t *testing.T) {
	cases := []struct {
		name   string
		break_ func(p *pipeplan.Plan)
		want   string
	}{
		{"format", func(p *pipeplan.Plan) { p.Format = "x" }, "format: want"},
		{"gpus", func(p *pipeplan.Plan) { p.GPUs = 3 }, "gpus: the plan is for 3"},
		{"copies", func(p *pipeplan.Plan) { p.WeightCopies = 2 }, "weight_copies"},
		{"model", func(p *pipeplan.Plan) { p.ActivationModel = pipeplan.ActivationsInput }, "activation_model"},
		{"bandwidth", func(p *pipeplan.Plan) { p.Bandwidth = 2 }, "bandwidth"},
		{"period", func(p *pipeplan.Plan) { p.Period = 0 }, "period: want a positive"},
		{"gap", func(p *pipeplan.Plan) { p.Stages[1].First = 3 }, "stages[1].first: want 2"},
		{"short", func(p *pipeplan.Plan) { p.Stages[2].Last = 2; p.Stages[2].First = 2; p.Stages[1].Last = 1 }, "stages[1].last"},
		{"device", func(p *pipeplan.Plan) { p.Stages[1].GPU = 2 }, "stages[1].gpu"},
		{"missing", func(p *pipeplan.Plan) { p.Pattern = p.Pattern[1:] }, "no F of stage 0"},
		{"twice", func(p *pipeplan.Plan) { p.Pattern = append(p.Pattern, p.Pattern[0]) }, "a second F of stage 0"},
		{"stray transfer", func(p *pipeplan.Plan) { p.Stages[1].GPU = 0 }, "whose output stays"},
		{"start", func(p *pipeplan.Plan) { p.Pattern[0].Start = 2.5 }, "pattern[0].start"},
		{"duration", func(p *pipeplan.Plan) { p.Pattern[0].Duration = .4 }, "pattern[0].duration: F of stage 0 lasts 0.5"},
		{"dependency", func(p *pipeplan.Plan) { p.Pattern[9].Shift = 2 }, "B of stage 0 starts"},
		{"overlap", func(p *pipeplan.Plan) { p.Pattern[5].Start = 1.25 }, "gpu 0: F of stage 2 [1, 1.5) overlaps B of stage 2"},
		{"memory claim", func(p *pipeplan.Plan) { p.MemoryPerGPU[0] = 19 }, "memory_per_gpu[0]: the plan says 19"},
		{"memory count", func(p *pipeplan.Plan) { p.MemoryPerGPU = p.MemoryPerGPU[:1] }, "memory_per_gpu: want 2 values"},
		{"contiguous", func(p *pipeplan.Plan) { p.Contiguous = true }, "contiguous: is true"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pr, p := nonContiguous(t)
			tc.break_(p)
			rep := pipeline.Validate(pr, p)
			var msgs []string
			for _, is := range rep.Issues {
				msgs = append(msgs, is.String())
			}
			all := strings.Join(msgs, "\n")
			if rep.Valid || !strings.Contains(all, tc.want) {
				t.Errorf("issues:\n%s\nwant one containing %q", all, tc.want)
			}
		})
	}
}

// TestValidateLinkSum: two boundaries between the same devices share one link, whose
// load is their sum (spec §7 item 9): 4 × 0.75 > T = 2.
func TestValidateLinkSum(t *testing.T) {
	pr, p := nonContiguous(t)
	c := &chainplan.Chain{Format: chainplan.ChainFormat, Stages: []chainplan.Stage{
		{FwdTime: .5, BwdTime: .5, OutBytes: 3, SavedBytes: 3},
		{FwdTime: 1, BwdTime: 1, OutBytes: 3, SavedBytes: 5},
		{FwdTime: .5, BwdTime: .5, SavedBytes: 7},
	}}
	opts := pr.Options()
	opts.Bandwidth, p.Bandwidth = 4, 4 // 3 bytes in 0.75
	pr, err := pipeline.NewProblem(c, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range p.Pattern {
		if o.Op == pipeplan.CF || o.Op == pipeplan.CB {
			p.Pattern[i].Duration = .75
		}
	}
	rep := pipeline.Validate(pr, p)
	var link, bound bool
	for _, is := range rep.Issues {
		link = link || is.Field == "link 0-1" && strings.Contains(is.Msg, "last 3 in all")
		bound = bound || is.Field == "period" && strings.Contains(is.Msg, "load bound 3")
	}
	if !link || !bound {
		t.Errorf("issues %v: want the link's total 3 and the load bound 3 over T = 2", rep.Issues)
	}
}

// TestValidateLemma10 is the non-contiguous half of anchor A2 (Lemma 10, T:l.2652):
// weights (1, 2, 1), M = 2, P = 2, one weight copy and no activations: {1,3},{2} fits
// (no contiguous allocation does: planner/contiguous checks that half).
func TestValidateLemma10(t *testing.T) {
	_, p := nonContiguous(t)
	c := &chainplan.Chain{Format: chainplan.ChainFormat, Stages: []chainplan.Stage{
		{FwdTime: .5, BwdTime: .5, ParamBytes: 1},
		{FwdTime: 1, BwdTime: 1, ParamBytes: 2},
		{FwdTime: .5, BwdTime: .5, ParamBytes: 1},
	}}
	pr, err := pipeline.NewProblem(c, pipeplan.Options{GPUs: 2, MemoryBytes: 2, Bandwidth: 1, WeightCopies: 1})
	if err != nil {
		t.Fatal(err)
	}
	p.MemoryBytes, p.WeightCopies, p.MemoryPerGPU = 2, 1, []int64{2, 2}
	if err := pipeline.Check(pr, p); err != nil {
		t.Fatal(err)
	}
}
