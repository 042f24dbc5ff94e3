package pipedream

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tn is a test node: its id number, description, forward time (ms), activation and
// parameter sizes; the backward time is twice the forward.
type tn struct {
	id         int
	desc       string
	fwd        float64
	act, param int64
}

// profileText writes nodes and edges ("1>2 2>3") as a graph.txt.
func profileText(nodes []tn, edges string) string {
	var b strings.Builder
	for _, n := range nodes {
		fmt.Fprintf(&b, "node%d -- %s -- forward_compute_time=%g, backward_compute_time=%g, activation_size=%d.0, parameter_size=%d.0\n",
			n.id, n.desc, n.fwd, 2*n.fwd, n.act, n.param)
	}
	for _, e := range strings.Fields(edges) {
		a, c, _ := strings.Cut(e, ">")
		fmt.Fprintf(&b, "\tnode%s -- node%s\n", a, c)
	}
	return b.String()
}

func mustLinearize(t *testing.T, text string) *Import {
	t.Helper()
	g, err := Parse(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	imp, err := Linearize(g)
	if err != nil {
		t.Fatal(err)
	}
	return imp
}

func layerCuts(imp *Import) string {
	var s []string
	for _, l := range imp.Layers {
		s = append(s, l.Cut+"="+strings.Join(l.Nodes, "+"))
	}
	return strings.Join(s, " ")
}

func TestLinearizeDiamond(t *testing.T) {
	// Input -> 2 -> {3, 4} -> 5 -> 6: the branch 3|4 joins at 5, which ends one layer.
	imp := mustLinearize(t, profileText([]tn{
		{1, "Input", 100, 64, 0}, {2, "Conv2d(3, 8)", 1, 32, 80}, {3, "Conv2d(8, 8)", 2, 16, 40},
		{4, "ReLU", 0.5, 16, 0}, {5, "Add", 0.25, 16, 0}, {6, "Linear", 4, 8, 1000},
	}, "1>2 2>3 2>4 3>5 4>5 5>6"))
	if got, want := layerCuts(imp), "node2=node2 node5=node3+node4+node5 node6=node6"; got != want {
		t.Fatalf("layers %s, want %s", got, want)
	}
	c := imp.Chain
	if c.InputBytes != 64 {
		t.Errorf("InputBytes=%d, want 64", c.InputBytes)
	}
	s := c.Stages[1]
	// Times are PipeDream's milliseconds in seconds; sizes add up; out is the cut node's.
	if math.Abs(s.FwdTime-2.75e-3) > 1e-15 || math.Abs(s.BwdTime-5.5e-3) > 1e-15 {
		t.Errorf("times %g %g, want 2.75e-3 5.5e-3", s.FwdTime, s.BwdTime)
	}
	if s.OutBytes != 16 || s.SavedBytes != 48 || s.ParamBytes != 40 {
		t.Errorf("stage 2 = %+v, want out 16, saved 48, params 40", s)
	}
	if got, want := s.Name, "node5 Add (3 nodes)"; got != want {
		t.Errorf("Name=%q, want %q", got, want)
	}
	if got, want := c.Stages[0].Name, "node2 Conv2d"; got != want {
		t.Errorf("Name=%q, want %q", got, want)
	}
	// The input's own time is data loading, not a layer's.
	if got, want := c.SumTime(), 3*(1+2+0.5+0.25+4)*1e-3; math.Abs(got-want) > 1e-12 {
		t.Errorf("SumTime=%g, want %g", got, want)
	}
}

func TestLinearizeSideAndConstants(t *testing.T) {
	// 3 also feeds an auxiliary head 7 -> 8 that leads to no output; 9 is a constant
	// (no input, no cost) read by 5; 10 is an unused tuple element of 5.
	imp := mustLinearize(t, profileText([]tn{
		{1, "Input", 0, 64, 0}, {2, "Conv2d", 1, 32, 8}, {3, "Conv2d", 1, 32, 8}, {5, "LSTM", 1, 32, 8},
		{6, "Linear", 1, 8, 8}, {7, "AuxHead", 3, 8, 8}, {8, "Linear", 1, 4, 8}, {9, "hidden", 0, 0, 0},
		{10, "__getitem__(1)", 0, 4, 0}, {11, "Softmax", 1, 8, 0},
	}, "1>2 2>3 3>5 5>6 3>7 7>8 9>5 5>10 6>11"))
	if got, want := layerCuts(imp), "node2=node2 node3=node3+node7+node8 node5=node5+node10 node6=node6 node11=node11"; got != want {
		t.Fatalf("layers %s, want %s", got, want)
	}
	if got, want := strings.Join(imp.Constants, ","), "node9"; got != want {
		t.Errorf("Constants=%s, want %s", got, want)
	}
	if got, want := strings.Join(imp.Side, ","), "node7,node8,node10"; got != want {
		t.Errorf("Side=%s, want %s", got, want)
	}
	if imp.Output != "node11" {
		t.Errorf("Output=%s, want node11", imp.Output)
	}
}

func TestLinearizeSecondSource(t *testing.T) {
	// Two inputs: an encoder 1 -> 2 -> 3 and a decoder embedding 4 -> 5, joined at 6.
	// Nothing before 6 lies on every path, so 2, 3 and 5 make one layer.
	imp := mustLinearize(t, profileText([]tn{
		{1, "Input0", 0, 10, 0}, {2, "Embedding", 1, 8, 8}, {3, "LSTM", 1, 8, 8},
		{4, "Input1", 0, 6, 0}, {5, "Embedding", 1, 8, 8}, {6, "Attention", 1, 8, 8}, {7, "Linear", 1, 8, 8},
	}, "1>2 2>3 4>5 3>6 5>6 6>7"))
	if got, want := layerCuts(imp), "node6=node2+node3+node5+node6 node7=node7"; got != want {
		t.Fatalf("layers %s, want %s", got, want)
	}
	if imp.Chain.InputBytes != 16 {
		t.Errorf("InputBytes=%d, want 16 (both inputs)", imp.Chain.InputBytes)
	}
}

func TestLinearizeRefusals(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nodes []tn
		edges string
		want  string
	}{
		{"OnlyInput", []tn{{1, "Input", 0, 4, 0}}, "", "no node computes anything"},
		{"TwoOutputs", []tn{{1, "Input", 0, 4, 0}, {2, "Conv", 1, 4, 0}, {3, "Linear", 1, 4, 0}, {4, "Linear", 1, 4, 0}},
			"1>2 2>3 2>4", "two outputs depend on as many nodes (2), node3"},
		{"SideCrossesCut", []tn{{1, "Input", 0, 4, 0}, {2, "Conv", 1, 4, 0}, {3, "Conv", 1, 4, 0}, {4, "Conv", 1, 4, 0},
			{5, "Conv", 1, 4, 0}, {6, "Linear", 1, 4, 0}, {7, "Aux", 1, 4, 0}},
			"1>2 2>3 3>4 4>5 5>6 2>7 4>7", "node7 (Aux, line 7) leads to no output and reads node2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := Parse(strings.NewReader(profileText(tc.nodes, tc.edges)))
			if err != nil {
				t.Fatal(err)
			}
			_, err = Linearize(g)
			if !errors.Is(err, ErrNotLinear) {
				t.Fatalf("err=%v, want ErrNotLinear", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err=%q, want it to contain %q", err, tc.want)
			}
		})
	}
}

// sharedLayers are the layer counts of the PipeDream profiles under testdata/pipedream
// (docs/formats.md lists them with their node counts).
var sharedLayers = map[string]int{
	"alexnet": 21, "densenet121": 77, "gnmt": 3, "inception_v3": 32,
	"resnet101": 73, "resnet18": 23, "resnet50": 39, "vgg16": 39,
}

func TestLinearizeSharedProfiles(t *testing.T) {
	files, err := filepath.Glob("../../testdata/pipedream/*.graph.txt")
	if err != nil || len(files) != len(sharedLayers) {
		t.Fatalf("found %d profiles (%v), want %d", len(files), err, len(sharedLayers))
	}
	for _, f := range files {
		model := strings.TrimSuffix(filepath.Base(f), ".graph.txt")
		t.Run(model, func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			imp := mustLinearize(t, string(b))
			if got, want := imp.Chain.Len(), sharedLayers[model]; got != want {
				t.Errorf("%d layers, want %d", got, want)
			}
			if err := imp.Chain.Validate(); err != nil {
				t.Fatal(err)
			}
			// Nothing is lost: every non-input node is in exactly one layer or a
			// constant, and the chain's totals are the profile's.
			g, _ := Parse(strings.NewReader(string(b)))
			var fwd, bwd float64
			var params int64
			inputs := map[string]bool{}
			for _, id := range imp.Inputs {
				inputs[id] = true
			}
			for _, n := range g.Nodes {
				if !inputs[n.ID] {
					fwd += n.FwdMS * 1e-3
					bwd += n.BwdMS * 1e-3
					params += n.ParamBytes
				}
			}
			seen := len(imp.Inputs) + len(imp.Constants)
			var cfwd, cbwd float64
			var cparams int64
			for i, s := range imp.Chain.Stages {
				seen += len(imp.Layers[i].Nodes)
				cfwd += s.FwdTime
				cbwd += s.BwdTime
				cparams += s.ParamBytes
			}
			if seen != len(g.Nodes) {
				t.Errorf("%d nodes accounted for, the profile has %d", seen, len(g.Nodes))
			}
			if math.Abs(cfwd-fwd) > 1e-9 || math.Abs(cbwd-bwd) > 1e-9 || cparams != params {
				t.Errorf("chain totals fwd %g bwd %g params %d, profile %g %g %d", cfwd, cbwd, cparams, fwd, bwd, params)
			}
		})
	}
}

// TestCutNodesAgainstBruteForce compares the dominator-based cut nodes with their
// definition on random DAGs: v is a cut node when removing it disconnects every entry
// node (no core predecessor) from the output.
func TestCutNodesAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 1))
	for trial := 0; trial < 2000; trial++ {
		n := 2 + rng.IntN(14)
		var nodes []tn
		var edges []string
		for i := 1; i <= n; i++ {
			nodes = append(nodes, tn{i, "Op", 1, 4, 0})
			if i > 1 {
				// Each node reads an earlier one, sometimes two: a connected DAG.
				edges = append(edges, fmt.Sprintf("%d>%d", 1+rng.IntN(i-1), i))
				if rng.IntN(3) == 0 {
					edges = append(edges, fmt.Sprintf("%d>%d", 1+rng.IntN(i-1), i))
				}
			}
		}
		g, err := Parse(strings.NewReader(profileText(nodes, strings.Join(edges, " "))))
		if err != nil {
			t.Fatal(err)
		}
		d := newDAG(g)
		out := d.order[len(d.order)-1]
		core := d.ancestors(out)
		got := map[int]bool{}
		for _, c := range d.cutNodes(out, core) {
			got[c] = true
		}
		for v := range d.nodes {
			if !core[v] {
				continue
			}
			if want := v == out || !reachesAvoiding(d, core, out, v); got[v] != want {
				t.Fatalf("trial %d: node%d cut=%v, want %v (edges %v)", trial, v+1, got[v], want, edges)
			}
		}
	}
}

// reachesAvoiding reports whether out is reachable from some core entry node without
// passing through skip.
func reachesAvoiding(d *dag, core []bool, out, skip int) bool {
	seen := make([]bool, len(d.nodes))
	var stack []int
	for v := range d.nodes {
		if !core[v] || v == skip {
			continue
		}
		entry := true
		for _, p := range d.pred[v] {
			entry = entry && !core[p]
		}
		if entry {
			stack = append(stack, v)
			seen[v] = true
		}
	}
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if v == out {
			return true
		}
		for _, s := range d.succ[v] {
			if core[s] && s != skip && !seen[s] {
				seen[s] = true
				stack = append(stack, s)
			}
		}
	}
	return false
}
