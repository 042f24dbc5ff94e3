package plot

import (
	"errors"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/multichain"
)

// dualTowers is a bundle of a four-stage and a two-stage tower.
func dualTowers() *chainplan.MultiChain {
	tower := func(n int, a int64) chainplan.Chain {
		c := chainplan.Chain{Format: chainplan.ChainFormat, InputBytes: a}
		for range n {
			c.Stages = append(c.Stages, chainplan.Stage{FwdTime: 1, BwdTime: 2, OutBytes: a, SavedBytes: 3 * a, BwdTmpBytes: a})
		}
		return c
	}
	return &chainplan.MultiChain{Format: chainplan.MultiChainFormat, Branches: []chainplan.Chain{tower(4, 1<<20), tower(2, 2<<20)},
		Loss: chainplan.Loss{FwdTime: 0.5, BwdTime: 0.5}}
}

// TestMultichainFrontier: the picture has the multichain staircase, multichain-linear at
// the asked budgets (never below the staircase at the same budget), per-block and
// store-all, and draws with their legend.
func TestMultichainFrontier(t *testing.T) {
	mc := dualTowers()
	p, err := multichain.Solve(mc, 26<<20, multichain.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := MultichainFrontierOf(mc, FrontierOptions{Budgets: 4, Chosen: p})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]Series{}
	for _, s := range d.Series {
		names[s.Name] = s
	}
	if len(names) != 4 || len(names["multichain-linear"].Points) != 4 || len(names["per-block"].Points) != 1 {
		t.Fatalf("series %+v", d.Series)
	}
	steps := names["multichain"].Points
	if last := steps[len(steps)-1]; last.Makespan != mc.SumTime() || names["store-all"].Points[0].Makespan != mc.SumTime() {
		t.Fatalf("the staircase ends at %+v, store-all at %+v, want the makespan %v", last, names["store-all"].Points, mc.SumTime())
	}
	f, err := Frontier(d)
	if err != nil {
		t.Fatal(err)
	}
	svg, err := f.SVG()
	if err != nil {
		t.Fatal(err)
	}
	doc := parseSVG(t, svg)
	for _, s := range []string{"multichain", "multichain-linear", "per-block", "store-all", "multichain at 26.00 MiB"} {
		if !doc.hasText(s) {
			t.Errorf("no text %q in the frontier", s)
		}
	}
	if got := len(doc.strokes(hex("multichain"))); got != 2 {
		t.Errorf("multichain: %d stroked paths, want the staircase and its legend line", got)
	}
}

// TestMultichainTimeline: one box per compute operation (free_grad is none), labelled by
// branch and stage, the peak the replay's.
func TestMultichainTimeline(t *testing.T) {
	mc := dualTowers()
	p, err := multichain.Solve(mc, 26<<20, multichain.Options{Method: multichain.DP})
	if err != nil {
		t.Fatal(err)
	}
	d, err := MultichainTimelineOf(mc, p, 0)
	if err != nil {
		t.Fatal(err)
	}
	frees := 0
	for _, o := range p.Sequence {
		if o.Kind == chainplan.FreeGrad {
			frees++
		}
	}
	if len(d.Ops) != len(p.Sequence)-frees || d.PeakBytes != p.PeakBytes || d.Ops[0].Label != "F1.1" {
		t.Fatalf("timeline: %d ops (want %d), peak %d (want %d), first %q", len(d.Ops), len(p.Sequence)-frees,
			d.PeakBytes, p.PeakBytes, d.Ops[0].Label)
	}
	if _, err := Timeline(d); err != nil {
		t.Fatal(err)
	}
	bad := *p
	bad.Sequence = p.Sequence[1:]
	if _, err := MultichainTimelineOf(mc, &bad, 0); !errors.Is(err, chainplan.ErrInvalidPlan) {
		t.Fatalf("invalid plan: %v", err)
	}
}
