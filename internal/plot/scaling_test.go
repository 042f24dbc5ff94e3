package plot_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/plot"
	"github.com/chainplan/chainplan/planner/paradl"
)

func TestScaling(t *testing.T) {
	a := &paradl.Advice{Candidates: []paradl.Candidate{
		{Strategy: paradl.Data, Devices: 4, Feasible: true, EpochTimeS: 400},
		{Strategy: paradl.Data, Devices: 8, Feasible: true, EpochTimeS: 210},
		{Strategy: paradl.DataFilter, Devices: 8, Feasible: true, EpochTimeS: 300},
		{Strategy: paradl.DataFilter, Devices: 8, Feasible: true, EpochTimeS: 250}, // another factorisation: the best is kept
		{Strategy: paradl.Filter, Devices: 8, Feasible: false, EpochTimeS: 1},      // infeasible: not drawn
	}}
	d := plot.ScalingOf(a, "resnet50 on abci")
	if len(d.Series) != 2 || d.Series[0].Name != "data" || d.Series[1].Points[0].EpochTimeS != 250 {
		t.Fatalf("ScalingOf = %+v", d)
	}
	fig, err := plot.Scaling(d)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := fig.Encode(&b, plot.SVG); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	for _, want := range []string{"<svg", "time per epoch", "devices", "data", "df", "resnet50 on abci"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the picture lacks %q", want)
		}
	}
	if _, err := plot.Scaling(&plot.ScalingData{}); !errors.Is(err, chainplan.ErrUnsupported) {
		t.Errorf("empty: %v, want ErrUnsupported", err)
	}
}
