package amp_test

import (
	"math"
	"testing"

	"github.com/chainplan/chainplan/planner/amp"
	"github.com/chainplan/chainplan/planner/cluster"
	"github.com/chainplan/chainplan/planner/workload"
)

func readCluster(tb testing.TB, name string) *cluster.Cluster {
	tb.Helper()
	c, err := cluster.ReadFile("../../examples/clusters/" + name)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// e1Model is AMP-E1's model (spec §3.9): 4 identical layers of 10 ms forward+backward per
// micro-batch of 1, 10 MB of activation at every boundary, 200 MB of gradients per layer.
func e1Model() *workload.Model {
	m := &workload.Model{Name: "amp-e1", BatchSize: 1, DTypeBytes: 4, InputBytes: 10e6}
	for range 4 {
		m.Layers = append(m.Layers, workload.Layer{Name: "layer", FwdTimeS: 0.004, BwdTimeS: 0.006,
			InBytes: 10e6, OutBytes: 10e6, WeightBytes: 200e6})
	}
	return m
}

// AP-8: AMP-E1's three strategies at mbs = 1 cost 105.0, 111.2 and 200.0 ms (Eq. 4) and
// rank in that order.
func TestAMPE1(t *testing.T) {
	res, err := amp.Search(e1Model(), readCluster(t, "amp-e1.yaml"), amp.Options{GlobalBatch: 8, TMPMax: 1,
		MemoryCheck: amp.MemoryOff, Optimizer: "none", TopK: -1})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		pp, dp, gas int
		pipe, sync  float64
		total       float64
	}{
		{2, 2, 4, 0.101, 0.004, 0.105},
		{4, 1, 8, 0.1112, 0, 0.1112},
		{1, 4, 2, 0.080, 0.120, 0.200},
	}
	var ranks []int
	for _, w := range want {
		found := false
		for _, c := range res.Candidates {
			if c.PP != w.pp || c.DP != w.dp || c.MBS != 1 {
				continue
			}
			found = true
			if c.GAS != w.gas || math.Abs(c.PipelineTimeS-w.pipe) > 1e-12 || math.Abs(c.DPSyncS-w.sync) > 1e-12 ||
				math.Abs(c.IterationTimeS-w.total) > 1e-12 {
				t.Errorf("pp=%d dp=%d: gas %d, T^pp %.6g, sync %.6g, T %.6g; want %d, %.6g, %.6g, %.6g",
					w.pp, w.dp, c.GAS, c.PipelineTimeS, c.DPSyncS, c.IterationTimeS, w.gas, w.pipe, w.sync, w.total)
			}
			ranks = append(ranks, c.Rank)
		}
		if !found {
			t.Fatalf("no pp=%d dp=%d mbs=1 candidate", w.pp, w.dp)
		}
	}
	if !(ranks[0] < ranks[1] && ranks[1] < ranks[2]) {
		t.Errorf("ranks %v, want 105.0 < 111.2 < 200.0 ms in that order", ranks)
	}
}

// AP-9: AMP's candidate counts on 4 nodes of 4 devices: 53 at gbs 32, 65 at gbs 64.
func TestEnumerationCounts(t *testing.T) {
	for _, tt := range []struct {
		gbs  int64
		want int
	}{{32, 53}, {64, 65}} {
		if got := len(amp.Enumerate(16, 4, 4, 30, tt.gbs)); got != tt.want {
			t.Errorf("Enumerate(gbs=%d) has %d candidates, want %d", tt.gbs, got, tt.want)
		}
	}
	res, err := amp.Search(gpt2Model(t), readCluster(t, "amp-homogeneous.yaml"), amp.Options{GlobalBatch: 32,
		MemoryCheck: amp.MemoryOff, TopK: -1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Enumerated != 53 || len(res.Candidates) != 53 {
		t.Errorf("Search enumerated %d and ranked %d candidates, want 53", res.Enumerated, len(res.Candidates))
	}
}

// AP-10: Megatron's uniform GPT-2 assignment over AMP's 30-entry layer list (2 entries
// before the 24 layers, 4 after): [0,14,30] at pp = 2, [0,8,14,20,30] at pp = 4.
func TestMegatronBoundaries(t *testing.T) {
	for _, tt := range []struct {
		pp   int
		want []int
	}{{2, []int{0, 14, 30}}, {4, []int{0, 8, 14, 20, 30}}, {1, []int{0, 30}}} {
		got := amp.UniformBoundaries(30, tt.pp, 2, 4)
		if len(got) != len(tt.want) {
			t.Fatalf("pp=%d: %v, want %v", tt.pp, got, tt.want)
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Fatalf("pp=%d: %v, want %v", tt.pp, got, tt.want)
			}
		}
	}
}
