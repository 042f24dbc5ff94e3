package plot

import (
	"errors"
	"math"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/rotor"
)

// hex is the SVG colour of an algorithm.
func hex(name string) string {
	c := algoColor(name)
	return "#" + hex2(c.R) + hex2(c.G) + hex2(c.B)
}

func hex2(v uint8) string {
	const digits = "0123456789ABCDEF"
	return string([]byte{digits[v>>4], digits[v&15]})
}

// TestFrontierStructure draws known series and reads them back from the SVG: one
// staircase per Steps series (2n−1 corners for n points) plus its legend line, one marker
// per point plus the legend's, the chosen plan's label and its budget line at its x.
func TestFrontierStructure(t *testing.T) {
	const mib = 1 << 20
	d := &FrontierData{Title: "T", SumTime: 1, Series: []Series{
		{Name: "rotor", Kind: Steps, Points: []Point{{100 * mib, 2}, {150 * mib, 1.5}, {300 * mib, 1}}},
		{Name: "sequential", Kind: Points, Points: []Point{{120 * mib, 1.9}, {180 * mib, 1.7}, {250 * mib, 1.6}, {310 * mib, 1.2}}},
		{Name: "store-all", Kind: Points, Points: []Point{{300 * mib, 1}}},
	}, Chosen: &Mark{Label: "rotor at 150 MiB", Point: Point{150 * mib, 1.5}}}
	f, err := Frontier(d)
	if err != nil {
		t.Fatal(err)
	}
	svg, err := f.SVG()
	if err != nil {
		t.Fatal(err)
	}
	doc := parseSVG(t, svg)
	rotorLines := doc.strokes(hex("rotor"))
	if len(rotorLines) != 2 {
		t.Fatalf("rotor: %d stroked paths, want the staircase and its legend line", len(rotorLines))
	}
	if got := len(rotorLines[0].pts); got != 5 {
		t.Errorf("rotor staircase has %d corners, want 5 for 3 points", got)
	}
	if got := len(doc.strokes(hex("sequential"))); got != 4+1 {
		t.Errorf("sequential: %d markers, want 4 and the legend's", got)
	}
	if got := len(doc.fills(hex("store-all"))) + len(doc.strokes(hex("store-all"))); got < 2 {
		t.Errorf("store-all: %d marker paths, want the point and the legend's", got)
	}
	for _, s := range []string{"T", "rotor", "sequential", "store-all", "rotor at 150 MiB", "makespan (s)", "activation memory budget (MiB)"} {
		if !doc.hasText(s) {
			t.Errorf("no text %q in the frontier", s)
		}
	}
	// The staircase's corners sit at the points' budgets and makespans.
	x, y := doc.xAxis(t), doc.yAxis(t)
	first := rotorLines[0].pts[0]
	if math.Abs(x.value(first[0])-100) > 0.5 || math.Abs(y.value(first[1])-2) > 0.01 {
		t.Errorf("rotor starts at (%.2f MiB, %.3f s), want (100 MiB, 2 s)", x.value(first[0]), y.value(first[1]))
	}
	// The chosen plan's budget line is the dashed vertical black stroke.
	var found bool
	for _, p := range doc.strokes("#000000") {
		if len(p.pts) == 2 && p.pts[0][0] == p.pts[1][0] && p.style["stroke-dasharray"] != "" {
			found = true
			if got := x.value(p.pts[0][0]); math.Abs(got-150) > 0.5 {
				t.Errorf("chosen budget line at %.2f MiB, want 150", got)
			}
		}
	}
	if !found {
		t.Error("no dashed budget line for the chosen plan")
	}
}

// TestFrontierOverhead checks the overhead axis: the store-all point is at 0 %.
func TestFrontierOverhead(t *testing.T) {
	d := &FrontierData{SumTime: 2, Overhead: true, Series: []Series{
		{Name: "rotor", Kind: Steps, Points: []Point{{10, 3}, {20, 2}}},
	}}
	f, err := Frontier(d)
	if err != nil {
		t.Fatal(err)
	}
	svg, _ := f.SVG()
	doc := parseSVG(t, svg)
	y := doc.yAxis(t)
	pts := doc.strokes(hex("rotor"))[0].pts
	if got := y.value(pts[0][1]); math.Abs(got-50) > 0.1 {
		t.Errorf("first point at %.2f %%, want 50", got)
	}
	if got := y.value(pts[len(pts)-1][1]); math.Abs(got) > 0.1 {
		t.Errorf("last point at %.2f %%, want 0", got)
	}
	if _, err := Frontier(&FrontierData{Overhead: true, Series: d.Series}); err == nil {
		t.Error("overhead without SumTime: no error")
	}
}

func TestFrontierEmpty(t *testing.T) {
	if _, err := Frontier(&FrontierData{}); !errors.Is(err, chainplan.ErrUnsupported) {
		t.Fatalf("got %v, want ErrUnsupported", err)
	}
}

// TestFrontierOf checks the computed series on a short chain: rotor's frontier as the
// planner gives it, one sequential point per segment count, store-all at the peak, and
// with a bandwidth the offloading series at the asked number of budgets, none slower than
// offloading nothing at the same budget would allow below store-all.
func TestFrontierOf(t *testing.T) {
	c, err := chainplan.ReadChain("../../examples/tiny.json")
	if err != nil {
		t.Fatal(err)
	}
	plan := &chainplan.Plan{Algo: "rotor", BudgetBytes: 200, Makespan: 1}
	d, err := FrontierOf(c, FrontierOptions{BandwidthBytesPerS: 1e3, Budgets: 4, Chosen: plan})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"sequential": c.Len(), "store-all": 1, "pofo": 4, "offload": 4}
	fr, err := rotor.SolveFrontier(c, rotor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want["rotor"] = len(fr.Points)
	for _, s := range d.Series {
		if n, ok := want[s.Name]; ok && len(s.Points) != n {
			t.Errorf("%s: %d points, want %d", s.Name, len(s.Points), n)
		}
		delete(want, s.Name)
	}
	delete(want, "revolve")
	if len(want) > 0 {
		t.Errorf("missing series: %v", want)
	}
	if d.Chosen == nil || d.Chosen.Bytes != 200 {
		t.Errorf("chosen mark %+v, want the plan at 200 bytes", d.Chosen)
	}
	if _, err := Frontier(d); err != nil {
		t.Fatal(err)
	}
}
