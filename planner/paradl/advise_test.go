package paradl_test

import (
	"errors"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/cluster"
	"github.com/chainplan/chainplan/planner/paradl"
	"github.com/chainplan/chainplan/planner/workload"
	"github.com/chainplan/chainplan/profilearrow"
)

// profiled is the pyarrow fixture with the parallel fields (testdata/profiles/generate.py).
func profiled(tb testing.TB) *workload.Model {
	tb.Helper()
	p, err := profilearrow.ReadFile(filepath.Join("..", "..", "testdata", "profiles", "resnet_parallel.arrow"))
	if err != nil {
		tb.Fatal(err)
	}
	m, err := workload.FromProfile(p.Meta, p.Stages())
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

// Every strategy on a profiled model: the profile's parallel fields let filter, channel,
// spatial and the hybrids run; every feasible candidate fits its devices.
func TestAdviseProfiledModel(t *testing.T) {
	m := profiled(t)
	a := mustAdvise(t, m, cluster16(t, 64<<30), paradl.Options{DatasetSize: 100_000, BatchPerDevice: 8})
	seen := map[paradl.Strategy]bool{}
	for _, c := range a.Candidates {
		seen[c.Strategy] = true
		if c.Feasible && c.MemoryBytes > c.CapacityBytes {
			t.Errorf("%s p=%d: feasible at %d bytes over %d", c.Strategy, c.Devices, c.MemoryBytes, c.CapacityBytes)
		}
		if c.Feasible != (c.Rank > 0) {
			t.Errorf("%s p=%d: rank %d, feasible %v", c.Strategy, c.Devices, c.Rank, c.Feasible)
		}
	}
	for _, s := range []paradl.Strategy{paradl.Serial, paradl.Data, paradl.Spatial, paradl.Layer, paradl.Pipeline,
		paradl.Filter, paradl.Channel, paradl.DataFilter, paradl.DataSpatial} {
		if !seen[s] {
			t.Errorf("no %s candidate", s)
		}
	}
	if a.Gamma <= 0 || a.Optimizer != "Adam (profiled)" || a.OptimizerStateBytes != 2*27_164_832 {
		t.Errorf("γ %v, optimizer %q %d", a.Gamma, a.Optimizer, a.OptimizerStateBytes)
	}
	// Channel parallelism stops at the first convolution's 3 input channels (PD-5's rule).
	for _, c := range a.Candidates {
		if c.Strategy == paradl.Channel && c.Devices > 3 && c.Feasible {
			t.Errorf("channel at %d devices feasible past min C = 3", c.Devices)
		}
	}
	// Ranked by time: epoch times do not decrease down the feasible list.
	prev := 0.0
	for _, c := range a.Candidates {
		if c.Feasible && c.EpochTimeS < prev {
			t.Fatalf("rank %d (%v s) after %v s", c.Rank, c.EpochTimeS, prev)
		}
		if c.Feasible {
			prev = c.EpochTimeS
		}
	}
}

func cluster16(tb testing.TB, memory int64) *cluster.Cluster {
	tb.Helper()
	nodes := make([]cluster.Node, 4)
	for i := range nodes {
		nodes[i] = cluster.Node{Name: string(rune('a' + i)), DeviceType: "G", Devices: 4, MemoryBytes: memory,
			IntraBandwidth: 1e11, InterBandwidth: 2.5e10, HostBandwidth: 1.2e10, NICs: 1}
	}
	c, err := cluster.New(cluster.Cluster{Name: "four-nodes", Nodes: nodes, IntraLatencyS: 5e-6, InterLatencyS: 2e-5,
		Contention: cluster.Contention{Mode: cluster.ContentionAuto}})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// When data parallelism does not fit, rotor makes "data+checkpointing" a candidate that
// fits, charged its recomputation; pofo likewise with offloading.
func TestDataCheckpointing(t *testing.T) {
	m := profiled(t)
	// Devices of 250 MB: weights, gradients and Adam's state (~109 MB) leave too little for
	// the activations of 64 samples per device (~188 MB with γ), enough for rotor's.
	c := cluster16(t, 250e6)
	strategies := []paradl.Strategy{paradl.Data, paradl.DataCheckpoint, paradl.DataOffload}
	if testing.Short() {
		strategies = strategies[:2] // pofo's DP takes seconds on a loaded host
	}
	a := mustAdvise(t, m, c, paradl.Options{DatasetSize: 10_000, BatchPerDevice: 64, Devices: []int{4},
		Strategies: strategies})
	data := find(t, a, paradl.Data, 4, 0)
	savers := []paradl.Candidate{find(t, a, paradl.DataCheckpoint, 4, 0)}
	if !testing.Short() {
		savers = append(savers, find(t, a, paradl.DataOffload, 4, 0))
	}
	if data.Feasible {
		t.Fatalf("plain data parallelism fits (%d of %d bytes): the test needs it not to", data.MemoryBytes, data.CapacityBytes)
	}
	for _, s := range savers {
		if !s.Feasible || s.MemoryBytes > s.CapacityBytes || s.Saver == nil || s.Saver.PeakBytes > s.Saver.BudgetBytes ||
			s.Compute.RecomputeS <= 0 || s.EpochTimeS <= data.EpochTimeS {
			t.Fatalf("%s: %+v (saver %+v), want feasible, within budget, slower than plain data (%v s)", s.Strategy, s, s.Saver, data.EpochTimeS)
		}
	}
	// Where data parallelism fits, no saver candidate is made.
	big := mustAdvise(t, m, cluster16(t, 64<<30), paradl.Options{DatasetSize: 10_000, BatchPerDevice: 64, Devices: []int{4},
		Strategies: []paradl.Strategy{paradl.Data, paradl.DataCheckpoint}})
	if len(big.Candidates) != 1 {
		t.Fatalf("with room for data parallelism: %d candidates, want data alone", len(big.Candidates))
	}
}

// Errors name what is wrong: a strategy named explicitly that needs a missing field, and
// every bad option.
func TestAdviseErrors(t *testing.T) {
	c := cluster16(t, 1<<34)
	chainOnly := profiled(t)
	chainOnly.Known = workload.FieldMemory
	_, err := paradl.Advise(chainOnly, c, paradl.Options{DatasetSize: 10, GlobalBatch: 8, Strategies: []paradl.Strategy{paradl.Filter}})
	var me *workload.MissingError
	if !errors.As(err, &me) || me.Field != workload.FieldModules {
		t.Fatalf("filter without modules: %v", err)
	}
	// With the default list the strategy is skipped with a note.
	a, err := paradl.Advise(chainOnly, c, paradl.Options{DatasetSize: 10, GlobalBatch: 8})
	if err != nil || len(a.Notes) == 0 {
		t.Fatalf("default strategies without modules: %v, notes %v", err, a.Notes)
	}
	tests := []struct {
		field string
		o     paradl.Options
	}{
		{"dataset_size", paradl.Options{GlobalBatch: 8}},
		{"global_batch", paradl.Options{DatasetSize: 10}},
		{"global_batch", paradl.Options{DatasetSize: 10, GlobalBatch: 8, BatchPerDevice: 2}},
		{"strategies", paradl.Options{DatasetSize: 10, GlobalBatch: 8, Strategies: []paradl.Strategy{"tensor"}}},
		{"devices", paradl.Options{DatasetSize: 10, GlobalBatch: 8, Devices: []int{32}}},
		{"goal", paradl.Options{DatasetSize: 10, GlobalBatch: 8, Goal: "speed"}},
		{"gamma", paradl.Options{DatasetSize: 10, GlobalBatch: 8, Gamma: -1}},
		{"optimizer", paradl.Options{DatasetSize: 10, GlobalBatch: 8, Optimizer: "lion"}},
	}
	for _, tt := range tests {
		_, err := paradl.Advise(profiled(t), c, tt.o)
		var oe *paradl.OptionError
		if !errors.As(err, &oe) || oe.Field != tt.field || !errors.Is(err, chainplan.ErrUnsupported) {
			t.Errorf("%+v: %v, want an OptionError on %s", tt.o, err, tt.field)
		}
	}
}

// Property: more bandwidth is never slower. Scaling every bandwidth of the cluster up
// never raises a candidate's epoch time, on random models and clusters.
func TestAdviseMoreBandwidthNeverSlower(t *testing.T) {
	r := rand.New(rand.NewPCG(26, 1))
	for trial := range 50 {
		m := toy()
		for i := range m.Layers {
			m.Layers[i].FwdTimeS *= 0.5 + r.Float64()
			m.Layers[i].WeightBytes = int64(r.IntN(1 << 24))
		}
		slow := cluster16(t, 1<<40)
		fast := *slow
		fast.Nodes = slices.Clone(slow.Nodes)
		for i := range fast.Nodes {
			fast.Nodes[i].IntraBandwidth *= 1 + 4*r.Float64()
			fast.Nodes[i].InterBandwidth *= 1 + 4*r.Float64()
		}
		fc, err := cluster.New(fast)
		if err != nil {
			t.Fatal(err)
		}
		o := paradl.Options{DatasetSize: int64(1000 + r.IntN(100000)), GlobalBatch: int64(16 << r.IntN(4)), Gamma: 1,
			Optimizer: paradl.OptimizerNone, Segments: 4}
		before := mustAdvise(t, m, slow, o)
		after := mustAdvise(t, m, fc, o)
		times := map[[3]int]float64{}
		for _, c := range before.Candidates {
			times[[3]int{slices.Index(paradl.Strategies, c.Strategy), c.Devices, c.SplitDegree}] = c.EpochTimeS
		}
		for _, c := range after.Candidates {
			if b := times[[3]int{slices.Index(paradl.Strategies, c.Strategy), c.Devices, c.SplitDegree}]; c.EpochTimeS > b*(1+1e-12) {
				t.Fatalf("trial %d: %s at %d devices takes %v s with more bandwidth, %v s before", trial, c.Strategy, c.Devices, c.EpochTimeS, b)
			}
		}
	}
}
