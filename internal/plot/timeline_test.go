package plot

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner"
)

func colorHex(c color.Color) string {
	r, g, b, _ := c.RGBA()
	return fmt.Sprintf("#%02X%02X%02X", r>>8, g>>8, b>>8)
}

// kiloChain is four stages of 1 KiB activations (2 KiB saved), unit times.
func kiloChain() *chainplan.Chain {
	c := &chainplan.Chain{Format: chainplan.ChainFormat, InputBytes: 1024}
	for range 4 {
		c.Stages = append(c.Stages, chainplan.Stage{FwdTime: 1, BwdTime: 2, OutBytes: 1024, SavedBytes: 2048})
	}
	c.Loss = chainplan.Loss{FwdTime: 1, BwdTime: 1}
	return c
}

// TestTimelineStructure plans a chain under a tight budget and reads the picture back:
// one box per operation on the compute lane (plus one legend swatch per kind), no link
// lane, the memory curve with two corners per operation, the peak marker at the
// simulated peak and the budget and measured-peak lines at their values.
func TestTimelineStructure(t *testing.T) {
	c := kiloChain()
	p, err := planner.Solve(c, planner.Request{Algo: "rotor", BudgetBytes: 7 * 1024, Slots: 7 * 1024})
	if err != nil {
		t.Fatal(err)
	}
	d, err := TimelineOf(c, p, 8*1024)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Timeline(d)
	if err != nil {
		t.Fatal(err)
	}
	svg, _ := f.SVG()
	doc := parseSVG(t, svg)
	boxes, kinds := 0, 0
	for _, k := range []string{"F_all", "F_ck", "F_none", "B"} {
		n := len(doc.fills(colorHex(opColors[k])))
		if n > 0 {
			kinds++
		}
		boxes += n
	}
	if want := len(p.Sequence) + kinds; boxes != want {
		t.Errorf("%d operation boxes, want %d operations and %d legend swatches", boxes, len(p.Sequence), kinds)
	}
	if !doc.hasText("compute") || doc.hasText("link") {
		t.Error("want a compute lane and no link lane")
	}
	curve := doc.strokes(colorHex(colorMemory))
	if len(curve) != 2 || len(curve[0].pts) != 2*len(p.Sequence) {
		t.Fatalf("memory curve: %d paths, want the curve and its legend line with %d corners", len(curve), 2*len(p.Sequence))
	}
	y := doc.yAxis(t) // KiB
	top := 0.0
	for _, pt := range curve[0].pts {
		top = math.Max(top, y.value(pt[1]))
	}
	if math.Abs(top-float64(p.PeakBytes)/1024) > 0.02 {
		t.Errorf("the curve peaks at %.3f KiB, the plan at %d bytes", top, p.PeakBytes)
	}
	lineAt := func(col string, want float64, what string) {
		t.Helper()
		for _, l := range doc.strokes(col) {
			if len(l.pts) == 2 && l.pts[0][1] == l.pts[1][1] && l.pts[1][0]-l.pts[0][0] > 100 {
				if got := y.value(l.pts[0][1]); math.Abs(got-want) > 0.02 {
					t.Errorf("%s line at %.3f KiB, want %.3f", what, got, want)
				}
				return
			}
		}
		t.Errorf("no %s line", what)
	}
	lineAt(colorHex(colorBudget), 7, "budget")
	lineAt(colorHex(colorMeasure), 8, "measured peak")
	for _, s := range []string{"budget 7.00 KiB", "measured peak 8.00 KiB", fmt.Sprintf("peak %s", chainplan.FormatBytes(p.PeakBytes))} {
		if !doc.hasText(s) {
			t.Errorf("no legend text %q", s)
		}
	}
}

// TestTimelineTransfers draws an offloading timeline from data: a link lane with one box
// per transfer.
func TestTimelineTransfers(t *testing.T) {
	d := &TimelineData{
		Memory:    []Level{{0, 1, 100}, {1, 2, 50}},
		Ops:       []Span{{Start: 0, End: 1, Kind: "F_all"}, {Start: 1, End: 2, Kind: "B"}},
		Transfers: []Span{{Start: 0.2, End: 0.6, Kind: "offload"}, {Start: 1.1, End: 1.5, Kind: "prefetch"}, {Start: 1.5, End: 1.6, Kind: "prefetch"}},
	}
	f, err := Timeline(d)
	if err != nil {
		t.Fatal(err)
	}
	svg, _ := f.SVG()
	doc := parseSVG(t, svg)
	if !doc.hasText("link") {
		t.Error("no link lane")
	}
	if got := len(doc.fills(colorHex(opColors["prefetch"]))); got != 2+1 {
		t.Errorf("%d prefetch boxes, want 2 and the legend's", got)
	}
}

// TestTimelineOffloadPlan draws an offloading plan: one box per transfer on the link lane,
// the memory sampled by the offload simulator peaking at the plan's peak.
func TestTimelineOffloadPlan(t *testing.T) {
	c := kiloChain()
	for _, algo := range []string{"greedy", "autocapper"} {
		p, err := planner.Solve(c, planner.Request{Algo: algo, BudgetBytes: 6 * 1024, Bandwidth: 2048})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Offload.Transfers) == 0 {
			t.Fatalf("%s offloads nothing at 6 KiB; the test needs transfers", algo)
		}
		d, err := TimelineOf(c, p, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Transfers) != len(p.Offload.Transfers) || len(d.Ops) != len(p.Sequence) {
			t.Fatalf("%s: %d transfers and %d operations drawn, the plan has %d and %d", algo,
				len(d.Transfers), len(d.Ops), len(p.Offload.Transfers), len(p.Sequence))
		}
		var top int64
		for _, l := range d.Memory {
			top = max(top, l.Bytes)
		}
		if top != p.PeakBytes || d.PeakBytes != p.PeakBytes || top > 6*1024 {
			t.Errorf("%s: memory peaks at %d (marked %d), the plan's peak is %d within 6 KiB", algo, top, d.PeakBytes, p.PeakBytes)
		}
		f, err := Timeline(d)
		if err != nil {
			t.Fatal(err)
		}
		svg, _ := f.SVG()
		doc := parseSVG(t, svg)
		boxes := 0
		for _, k := range []string{"offload", "prefetch"} {
			if n := len(doc.fills(colorHex(opColors[k]))); n > 0 {
				boxes += n - 1 // the legend's swatch
			}
		}
		if !doc.hasText("link") || boxes != len(p.Offload.Transfers) {
			t.Errorf("%s: link lane %v with %d boxes, want %d", algo, doc.hasText("link"), boxes, len(p.Offload.Transfers))
		}
	}
}

func TestTimelineBadInput(t *testing.T) {
	bad := &chainplan.Plan{Algo: "rotor", Sequence: []chainplan.Op{{Kind: chainplan.B, Stage: 5}}}
	if _, err := TimelineOf(kiloChain(), bad, 0); !errors.Is(err, chainplan.ErrInvalidPlan) {
		t.Fatalf("got %v, want ErrInvalidPlan", err)
	}
	if _, err := Timeline(&TimelineData{}); !errors.Is(err, chainplan.ErrUnsupported) {
		t.Fatalf("got %v, want ErrUnsupported", err)
	}
}
