package paradl_test

import (
	"math"
	"strings"
	"testing"

	"github.com/chainplan/chainplan/planner/cluster"
	"github.com/chainplan/chainplan/planner/paradl"
	"github.com/chainplan/chainplan/planner/workload"
)

// δ = 4 bytes per element in every golden model of spec §2.11.
const delta = 4

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

// resnet50Log is the model behind the authors' log data_resnet_scaling_proj.log (spec
// §2.11 A): totals only, so one layer holding them, times per sample (batch 1).
func resnet50Log() *workload.Model {
	return &workload.Model{Name: "resnet50-log", BatchSize: 1, DTypeBytes: delta,
		Layers: []workload.Layer{{Name: "all", FwdTimeS: 0.003119502,
			InBytes: 14_971_596 * delta, OutBytes: 14_819_368 * delta, WeightBytes: 22_734_016 * delta}}}
}

// PD-1: the ResNet-50 data-parallel projection, every row (spec §2.11 A).
func TestPD1ResNet50DataGolden(t *testing.T) {
	golden := []struct {
		p            int
		comp, comm   float64
		commPerIterS float64
	}{
		{2, 1996.48128, 18.3672128, 0.0018367},
		{4, 998.24064, 13.9104096, 0.0027821},
		{8, 499.12032, 32.8884724, 0.0131554},
		{16, 249.56016, 18.187137, 0.0145497},
		{32, 124.78008, 9.9839437, 0.0159743},
		{64, 62.39004, 5.678286395, 0.0181415},
		{128, 31.19502, 3.4823479451, 0.0221806},
		{256, 15.59751, 2.3931260808, 0.0302927},
		{512, 7.798755, 1.8473165088, 0.0461829},
		{1024, 3.8993775, 1.5584128296, 0.0779206},
		{2048, 1.94968875, 1.4137478586, 0.1413748},
	}
	devices := []int{1}
	for _, g := range golden {
		devices = append(devices, g.p)
	}
	a := mustAdvise(t, resnet50Log(), abci(t), paradl.Options{DatasetSize: 1_280_000, BatchPerDevice: 64,
		Strategies: []paradl.Strategy{paradl.Serial, paradl.Data}, Devices: devices, Gamma: 1, Optimizer: paradl.OptimizerNone})
	near(t, "serial epoch", find(t, a, paradl.Serial, 1, 0).EpochTimeS, 3992.96256)
	for _, g := range golden {
		c := find(t, a, paradl.Data, g.p, 0)
		near(t, "T_comp", c.ComputeS, g.comp)
		near(t, "T_comm", c.CommS, g.comm)
		// The log prints the per-iteration time to 7 digits.
		if d := math.Abs(c.CommS/float64(c.Iterations) - g.commPerIterS); d > 5e-8 {
			t.Errorf("p=%d: T_comm/iter = %.8f, want %.7f", g.p, c.CommS/float64(c.Iterations), g.commPerIterS)
		}
		if c.MemoryBytes != 15_434_845_696 {
			t.Errorf("p=%d: memory %d, want 15434845696", g.p, c.MemoryBytes)
		}
	}
}

// vgg16Log is the model behind filter_vgg_scaling_proj.log (spec §2.11 B): the 13
// convolutions (partitioned) with their per-sample times and output sizes at 226 × 226
// (Chainer's ceil-mode pooling: 226, 113, 57, 29, 15, whose Σ|y| is the log's 13,939,200),
// and one unpartitioned layer holding the rest of the network's time.
func vgg16Log() *workload.Model {
	convs := []struct {
		name    string
		c, f    int64
		side    int64
		perSamp float64
	}{
		{"conv1_1", 3, 64, 226, 4.34765322602e-05}, {"conv1_2", 64, 64, 226, 0.000927499354885},
		{"conv2_1", 64, 128, 113, 0.00046375648711}, {"conv2_2", 128, 128, 113, 0.000927512974219},
		{"conv3_1", 128, 256, 57, 0.00047202796272}, {"conv3_2", 256, 256, 57, 0.00094405592544},
		{"conv3_3", 256, 256, 57, 0.00094405592544}, {"conv4_1", 256, 512, 29, 0.000488843300624},
		{"conv4_2", 512, 512, 29, 0.000977686601249}, {"conv4_3", 512, 512, 29, 0.000977686601249},
		{"conv5_1", 512, 512, 15, 0.000261781761582}, {"conv5_2", 512, 512, 15, 0.000261781761582},
		{"conv5_3", 512, 512, 15, 0.000261781761582},
	}
	m := &workload.Model{Name: "vgg16-log", BatchSize: 1, DTypeBytes: delta,
		Known: workload.FieldShapes | workload.FieldCounts | workload.FieldModules}
	for _, c := range convs {
		y := c.f * c.side * c.side * delta
		m.Layers = append(m.Layers, workload.Layer{Name: c.name, FwdTimeS: c.perSamp, InBytes: y, OutBytes: y,
			WeightBytes: 9 * c.c * c.f * delta,
			Parts:       []workload.Part{{Name: c.name, InChannels: c.c, OutChannels: c.f, OutBytesPerSample: float64(y)}}})
	}
	m.Layers = append(m.Layers, workload.Layer{Name: "pools+fc", FwdTimeS: 0.00029364205, InBytes: 512 * 8 * 8 * delta,
		OutBytes: 1000 * delta, WeightBytes: (512*8*8*4096 + 4096*4096 + 4096*1000) * delta})
	return m
}

// PD-2: the VGG16 filter-parallel projection, strong scaling at B = 32 (spec §2.11 B);
// PD-5's VGG half: filter parallelism is feasible up to p = 64, the smallest filter count.
func TestPD2VGG16FilterGolden(t *testing.T) {
	golden := []struct {
		p          int
		comp, comm float64
	}{
		{2, 5465.10787204, 2155.10112}, {4, 2920.48484805, 3253.71168}, {8, 1648.17333606, 15318.41304},
		{16, 1012.01758007, 16767.2124}, {32, 693.939702069, 18059.01528}, {64, 534.90076307, 19839.72312},
	}
	a := mustAdvise(t, vgg16Log(), abci(t), paradl.Options{DatasetSize: 1_280_000, GlobalBatch: 32,
		Strategies: []paradl.Strategy{paradl.Filter}, Devices: []int{2, 4, 8, 16, 32, 64, 128}, Gamma: 1,
		Optimizer: paradl.OptimizerNone})
	for _, g := range golden {
		c := find(t, a, paradl.Filter, g.p, 0)
		// The log's T_comp is printed to 12 significant digits: 1e-9 relative holds.
		near(t, "T_comp", c.ComputeS, g.comp)
		near(t, "T_comm", c.CommS, g.comm)
		if strings.Contains(c.Infeasible, "filters") {
			t.Errorf("p=%d: %s, want feasible up to min F = 64", g.p, c.Infeasible)
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

// toy is the model of spec §2.11 C: every layer partitioned and spatially split, times
// per sample, WU per iteration.
func toy() *workload.Model {
	type row struct {
		x, y, w, bi  int64
		fw, bw, wu   float64
		c, f, hx, hd int64
	}
	rows := []row{
		{3072, 65536, 1728, 64, 1e-4, 2e-4, 1e-3, 3, 64, 192, 4096},
		{65536, 65536, 36864, 64, 2e-4, 4e-4, 2e-3, 64, 64, 4096, 4096},
		{65536, 10, 655360, 10, 5e-5, 1e-4, 5e-3, 64, 10, 0, 0},
	}
	m := &workload.Model{Name: "toy", BatchSize: 1, DTypeBytes: delta,
		Known: workload.FieldShapes | workload.FieldCounts | workload.FieldModules}
	for i, r := range rows {
		name := []string{"conv1", "conv2", "fc"}[i]
		m.Layers = append(m.Layers, workload.Layer{Name: name, FwdTimeS: r.fw, BwdTimeS: r.bw, UpdateTimeS: r.wu,
			InBytes: r.x * delta, OutBytes: r.y * delta, WeightBytes: r.w * delta, BiasBytes: r.bi * delta, Spatial: true,
			Parts: []workload.Part{{Name: name, InChannels: r.c, OutChannels: r.f, OutBytesPerSample: float64(r.y * delta),
				Halo: true, HaloXBytes: float64(r.hx * delta), HaloDYBytes: float64(r.hd * delta)}}})
	}
	return m
}

// uniform returns one node of n devices where every link has α = 1e-5 s and β = 1e-10 s/B,
// the toy's network, without contention.
func uniform(tb testing.TB, n int) *cluster.Cluster {
	tb.Helper()
	c, err := cluster.New(cluster.Cluster{Name: "toy", Nodes: []cluster.Node{{Name: "n", DeviceType: "X", Devices: n,
		MemoryBytes: 1 << 40, IntraBandwidth: 1e10, NICs: 1}}, IntraLatencyS: 1e-5,
		Contention: cluster.Contention{Mode: cluster.ContentionNone}})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

func toyOptions(s ...paradl.Strategy) paradl.Options {
	return paradl.Options{DatasetSize: 51200, GlobalBatch: 256, Strategies: s, Devices: []int{1, 3, 4}, Gamma: 1,
		Optimizer: paradl.OptimizerNone, Segments: 4}
}

// PD-3: the toy model, every strategy of spec §2.11 C.
func TestPD3ToyModel(t *testing.T) {
	a := mustAdvise(t, toy(), uniform(t, 4), toyOptions(paradl.Serial, paradl.Data, paradl.Spatial, paradl.Pipeline,
		paradl.Filter, paradl.DataFilter))
	golden := []struct {
		s                  paradl.Strategy
		p, p2              int
		comp, comm         float64
		compIter, commIter float64
		mem                int64
	}{
		{paradl.Serial, 1, 0, 55.36, 0, 0.2768, 0, 548_735_016},
		{paradl.Data, 4, 0, 15.04, 0.09527424, 0.0752, 0.00047637, 141_347_880},
		{paradl.Spatial, 4, 0, 15.04, 0.63045504, 0.0752, 0.00315228, 141_347_880},
		{paradl.Pipeline, 3, 0, 47.08, 3.3754432, 0.2354, 0.01687722, 268_730_624},
		{paradl.Filter, 4, 0, 13.84, 6.07579776, 0.0692, 0.03037899, 544_571_304},
		{paradl.DataFilter, 4, 2, 14.24, 2.05702400, 0.0712, 0.01028512, 274_367_784},
	}
	for _, g := range golden {
		c := find(t, a, g.s, g.p, g.p2)
		near(t, string(g.s)+" T_comp", c.ComputeS, g.comp)
		near(t, string(g.s)+" T_comm", c.CommS, g.comm)
		near(t, string(g.s)+" T_comp/iter", c.ComputeS/float64(c.Iterations), g.compIter)
		if d := math.Abs(c.CommS/float64(c.Iterations) - g.commIter); d > 5e-9 {
			t.Errorf("%s: T_comm/iter %.9f, want %.8f", g.s, c.CommS/float64(c.Iterations), g.commIter)
		}
		if c.MemoryBytes != g.mem {
			t.Errorf("%s: memory %d, want %d", g.s, c.MemoryBytes, g.mem)
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
		const alpha, beta, iters, b = 1e-5, 1e-10, 200.0, 256.0
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
