package paradl_test

import (
	"math"
	"strings"
	"testing"

	golden "github.com/chainplan/chainplan/internal/paradlgolden"
	"github.com/chainplan/chainplan/planner/cluster"
	"github.com/chainplan/chainplan/planner/paradl"
	"github.com/chainplan/chainplan/planner/workload"
)

func abci(tb testing.TB) *cluster.Cluster {
	tb.Helper()
	c, err := cluster.ReadFile("../../examples/clusters/abci.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

func mustAdvise(tb testing.TB, m *workload.Model, c *cluster.Cluster, o paradl.Options) *paradl.Advice {
	tb.Helper()
	a, err := paradl.Advise(m, c, o)
	if err != nil {
		tb.Fatalf("Advise: %v", err)
	}
	return a
}

// find returns the candidate of strategy s at p devices (and p2 for the hybrids).
func find(tb testing.TB, a *paradl.Advice, s paradl.Strategy, p, p2 int) paradl.Candidate {
	tb.Helper()
	for _, c := range a.Candidates {
		if c.Strategy == s && c.Devices == p && c.SplitDegree == p2 {
			return c
		}
	}
	tb.Fatalf("no %s candidate at p = %d (p2 = %d)", s, p, p2)
	return paradl.Candidate{}
}

// near checks got against want to a relative 1e-9 (spec §5.6: "exact to 1e-9 relative").
func near(tb testing.TB, what string, got, want float64) {
	tb.Helper()
	if d := math.Abs(got - want); d > 1e-9*math.Abs(want) && d > 1e-15 {
		tb.Errorf("%s = %.12g, want %.12g (relative error %.2g)", what, got, want, d/math.Abs(want))
	}
}

// PD-1: the ResNet-50 data-parallel projection, every row (spec §2.11 A).
func TestPD1ResNet50DataGolden(t *testing.T) {
	devices := []int{1}
	for _, g := range golden.ResNet50Data {
		devices = append(devices, g.P)
	}
	a := mustAdvise(t, golden.ResNet50Log(), abci(t), paradl.Options{DatasetSize: golden.ResNet50DatasetSize,
		BatchPerDevice: golden.ResNet50BatchPerDevice, Strategies: []paradl.Strategy{paradl.Serial, paradl.Data},
		Devices: devices, Gamma: 1, Optimizer: paradl.OptimizerNone})
	near(t, "serial epoch", find(t, a, paradl.Serial, 1, 0).EpochTimeS, golden.ResNet50SerialS)
	for _, g := range golden.ResNet50Data {
		c := find(t, a, paradl.Data, g.P, 0)
		near(t, "T_comp", c.ComputeS, g.CompS)
		near(t, "T_comm", c.CommS, g.CommS)
		// The log prints the per-iteration time to 7 digits.
		if d := math.Abs(c.CommS/float64(c.Iterations) - g.CommPerIterS); d > 5e-8 {
			t.Errorf("p=%d: T_comm/iter = %.8f, want %.7f", g.P, c.CommS/float64(c.Iterations), g.CommPerIterS)
		}
		if c.MemoryBytes != golden.ResNet50MemoryBytes {
			t.Errorf("p=%d: memory %d, want %d", g.P, c.MemoryBytes, golden.ResNet50MemoryBytes)
		}
	}
}

// PD-2: the VGG16 filter-parallel projection, strong scaling at B = 32 (spec §2.11 B);
// PD-5's VGG half: filter parallelism is feasible up to p = 64, the smallest filter count.
func TestPD2VGG16FilterGolden(t *testing.T) {
	a := mustAdvise(t, golden.VGG16Log(), abci(t), paradl.Options{DatasetSize: golden.VGG16DatasetSize,
		GlobalBatch: golden.VGG16GlobalBatch, Strategies: []paradl.Strategy{paradl.Filter},
		Devices: []int{2, 4, 8, 16, 32, 64, 128}, Gamma: 1, Optimizer: paradl.OptimizerNone})
	for _, g := range golden.VGG16Filter {
		c := find(t, a, paradl.Filter, g.P, 0)
		// The log's T_comp is printed to 12 significant digits: 1e-9 relative holds.
		near(t, "T_comp", c.ComputeS, g.CompS)
		near(t, "T_comm", c.CommS, g.CommS)
		if strings.Contains(c.Infeasible, "filters") {
			t.Errorf("p=%d: %s, want feasible up to min F = 64", g.P, c.Infeasible)
		}
	}
	// The lesson of §2.11 B: the total is lowest at p = 4 (≈ 6174 s) and jumps at p = 8.
	if got := find(t, a, paradl.Filter, 4, 0).EpochTimeS; math.Abs(got-6174.19652805) > 1e-6 {
		t.Errorf("p=4 epoch %v, want ≈ 6174.2", got)
	}
	if c := find(t, a, paradl.Filter, 128, 0); c.Feasible || !strings.Contains(c.Infeasible, "min filters (64") {
		t.Errorf("p=128: feasible=%v (%s), want infeasible past min filters 64", c.Feasible, c.Infeasible)
	}
}

// uniform returns one node of n devices where every link has α = 1e-5 s and β = 1e-10 s/B,
// the toy's network, without contention.
func uniform(tb testing.TB, n int) *cluster.Cluster {
	tb.Helper()
	c, err := cluster.New(cluster.Cluster{Name: "toy", Nodes: []cluster.Node{{Name: "n", DeviceType: "X", Devices: n,
		MemoryBytes: 1 << 40, IntraBandwidth: 1 / golden.ToyBeta, NICs: 1}}, IntraLatencyS: golden.ToyAlpha,
		Contention: cluster.Contention{Mode: cluster.ContentionNone}})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

func toyOptions(s ...paradl.Strategy) paradl.Options {
	return paradl.Options{DatasetSize: golden.ToyDatasetSize, GlobalBatch: golden.ToyGlobalBatch, Strategies: s,
		Devices: []int{1, 3, 4}, Gamma: 1, Optimizer: paradl.OptimizerNone, Segments: golden.ToySegments}
}

// toy is the toy model of spec §2.11 C (internal/paradlgolden).
func toy() *workload.Model { return golden.ToyModel() }

// PD-3: the toy model, every strategy of spec §2.11 C.
func TestPD3ToyModel(t *testing.T) {
	a := mustAdvise(t, toy(), uniform(t, 4), toyOptions(paradl.Serial, paradl.Data, paradl.Spatial, paradl.Pipeline,
		paradl.Filter, paradl.DataFilter))
	for _, g := range golden.Toy {
		s := paradl.Strategy(g.Strategy)
		c := find(t, a, s, g.P, g.P2)
		near(t, g.Strategy+" T_comp", c.ComputeS, g.CompS)
		near(t, g.Strategy+" T_comm", c.CommS, g.CommS)
		near(t, g.Strategy+" T_comp/iter", c.ComputeS/float64(c.Iterations), g.CompIter)
		if d := math.Abs(c.CommS/float64(c.Iterations) - g.CommIter); d > 5e-9 {
			t.Errorf("%s: T_comm/iter %.9f, want %.8f", s, c.CommS/float64(c.Iterations), g.CommIter)
		}
		if c.MemoryBytes != g.MemoryBytes {
			t.Errorf("%s: memory %d, want %d", s, c.MemoryBytes, g.MemoryBytes)
		}
	}
	if c := find(t, a, paradl.Pipeline, 3, 0); len(c.Groups) != 3 || c.Groups[1] != [2]int{2, 2} {
		t.Errorf("pipeline groups %v, want one layer per device", c.Groups)
	}
}

// PD-5: the limits of the toy model: channel p = 4 infeasible (min C = 3), filter p ≤ 10,
// pipeline p ≤ 3, data p ≤ 256.
func TestPD5Limits(t *testing.T) {
	c := uniform(t, 512)
	o := toyOptions(paradl.Channel, paradl.Filter, paradl.Pipeline, paradl.Data)
	o.Devices = []int{3, 4, 10, 11, 256, 257}
	a := mustAdvise(t, toy(), c, o)
	tests := []struct {
		s        paradl.Strategy
		p        int
		feasible bool
		reason   string
	}{
		{paradl.Channel, 3, true, ""}, {paradl.Channel, 4, false, "min channels (3"},
		{paradl.Filter, 10, true, ""}, {paradl.Filter, 11, false, "min filters (10"},
		{paradl.Pipeline, 3, true, ""}, {paradl.Pipeline, 4, false, "3 layers"},
		{paradl.Data, 256, true, ""}, {paradl.Data, 257, false, "global batch"},
	}
	for _, tt := range tests {
		got := find(t, a, tt.s, tt.p, 0)
		if got.Feasible != tt.feasible || !strings.Contains(got.Infeasible, tt.reason) {
			t.Errorf("%s p=%d: feasible=%v (%q), want %v (%q)", tt.s, tt.p, got.Feasible, got.Infeasible, tt.feasible, tt.reason)
		}
	}
}

// PD-4: filter parallelism's T_comm in closed form, 3·I·(p−1)·Σ_{l<G}(α + B|y_l|δβ/p),
// equals the explicit sum of an all-gather and an all-reduce per layer.
func TestPD4FilterIdentity(t *testing.T) {
	m := toy()
	for _, p := range []int{2, 3, 4, 8} {
		o := toyOptions(paradl.Filter)
		o.Devices = []int{p}
		a := mustAdvise(t, m, uniform(t, 8), o)
		got := find(t, a, paradl.Filter, p, 0).Comm.LayerS
		const alpha, beta, iters, b = golden.ToyAlpha, golden.ToyBeta, 200.0, golden.ToyGlobalBatch
		var closed, explicit float64
		for _, l := range m.Layers[:len(m.Layers)-1] {
			y := float64(l.OutBytes)
			closed += alpha + b*y*beta/float64(p)
			explicit += cluster.RingAllGather(p, b*y/float64(p), cluster.Link{LatencyS: alpha, Bandwidth: 1 / beta}) +
				cluster.RingAllReduce(p, b*y, cluster.Link{LatencyS: alpha, Bandwidth: 1 / beta})
		}
		closed *= 3 * iters * float64(p-1)
		near(t, "closed form", got, closed)
		near(t, "explicit sum", got, iters*explicit)
	}
}

// PD-6: data+filter with φ = 2 and with φ = 1 differ only in the inter-node all-reduce.
func TestPD6Contention(t *testing.T) {
	build := func(phi float64) *cluster.Cluster {
		cont := cluster.Contention{Mode: cluster.ContentionNone}
		if phi > 1 {
			cont = cluster.Contention{Mode: cluster.ContentionFixed, Flows: phi}
		}
		c, err := cluster.New(cluster.Cluster{Name: "two-level", Nodes: []cluster.Node{
			{Name: "a", DeviceType: "X", Devices: 4, MemoryBytes: 1 << 40, IntraBandwidth: 5e10, InterBandwidth: 1.25e10, NICs: 2},
			{Name: "b", DeviceType: "X", Devices: 4, MemoryBytes: 1 << 40, IntraBandwidth: 5e10, InterBandwidth: 1.25e10, NICs: 2}},
			IntraLatencyS: 9e-6, InterLatencyS: 3e-5, Contention: cont})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	o := toyOptions(paradl.DataFilter)
	o.Devices = []int{8}
	one := find(t, mustAdvise(t, toy(), build(1), o), paradl.DataFilter, 8, 4)
	two := find(t, mustAdvise(t, toy(), build(2), o), paradl.DataFilter, 8, 4)
	if one.Comm.LayerS != two.Comm.LayerS || one.ComputeS != two.ComputeS || one.MemoryBytes != two.MemoryBytes {
		t.Fatalf("φ changed more than the gradient all-reduce: %+v vs %+v", one, two)
	}
	// The ring all-reduce over 2 nodes: 2(p1−1)(α + m/p1·β) with m = δΣ|w|/p2; φ = 2
	// doubles the bandwidth term only.
	m := 0.0
	for _, l := range toy().Layers {
		m += float64(l.WeightBytes)
	}
	m /= 4
	iters := 200.0
	wantOne := iters * 2 * (3e-5 + m/2/1.25e10)
	wantTwo := iters * 2 * (3e-5 + 2*m/2/1.25e10)
	near(t, "φ=1 gradient", one.Comm.GradientS, wantOne)
	near(t, "φ=2 gradient", two.Comm.GradientS, wantTwo)
	// With contention auto and 2 NICs, 4 data groups per node give φ = ⌈4/2⌉ = 2.
	auto := build(1)
	auto.Contention = cluster.Contention{Mode: cluster.ContentionAuto}
	near(t, "auto φ gradient", find(t, mustAdvise(t, toy(), auto, o), paradl.DataFilter, 8, 4).Comm.GradientS, wantTwo)
}
