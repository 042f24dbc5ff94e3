package plot

import (
	"errors"
	"math"
	"testing"

	"github.com/chainplan/chainplan"
)

// TestGridStructure draws 2×2 panels of two series, one with a gap, and reads back one
// line per unbroken run of points and one marker per point, the panel titles and one
// legend entry per series.
func TestGridStructure(t *testing.T) {
	panel := func(title string) Panel {
		return Panel{Title: title, Series: []Series{
			{Name: "rotor", Points: []Point{{0.1, 1.2}, {0.5, 1.1}, {0.9, 1}}},
			{Name: "pofo", Points: []Point{{0.1, 1.1}, {0.5, math.NaN()}, {0.9, 0.95}}},
		}}
	}
	d := &GridData{Title: "G", XLabel: "α", YLabel: "ratio", Rows: 2, Cols: 2,
		Panels: []Panel{panel("a"), panel("b"), panel("c"), panel("d")}}
	f, err := Grid(d)
	if err != nil {
		t.Fatal(err)
	}
	svg, _ := f.SVG()
	doc := parseSVG(t, svg)
	for _, s := range []string{"G", "a", "b", "c", "d", "rotor", "pofo"} {
		if !doc.hasText(s) {
			t.Errorf("no text %q", s)
		}
	}
	// rotor: per panel one line of 3 points and 3 (filled) markers; the legend's line.
	if got := len(doc.strokes(hex("rotor"))); got != 4+1 {
		t.Errorf("%d rotor lines, want 5", got)
	}
	if got := len(doc.fills(hex("rotor"))); got != 4*3 {
		t.Errorf("%d rotor markers, want 12", got)
	}
	// pofo: the gap leaves two single points, markers without a line.
	if got := len(doc.strokes(hex("pofo"))); got != 1 {
		t.Errorf("%d pofo lines, want the legend's only", got)
	}
	if _, err := Grid(&GridData{Rows: 1, Cols: 2, Panels: []Panel{panel("a")}}); !errors.Is(err, chainplan.ErrUnsupported) {
		t.Errorf("short grid: got %v", err)
	}
}
