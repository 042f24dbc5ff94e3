package amp_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/amp"
	"github.com/chainplan/chainplan/planner/cluster"
	"github.com/chainplan/chainplan/planner/workload"
)

// t4Speed is a T4's speed relative to the V100 the GPT-2 chain models (fp16 tensor-core
// peak 65 vs 125 TFLOP/s, memory bandwidth 320 vs 900 GB/s: about a third).
var t4Speed = map[string]float64{"T4-16GB": 0.35}

// AP-11 (soft, spec §3.9): on AMP's heterogeneous cluster at gbs 32, no dp = 16 candidate
// in the predicted top 5 (AMP ranked it 21st of 53), and a mbs = 1, pp ∈ {4, 8}, tmp = 1
// candidate in the top 3.
func TestHeterogeneousFixture(t *testing.T) {
	res, err := amp.Search(gpt2Model(t), readCluster(t, "amp-het-cluster.yaml"), amp.Options{GlobalBatch: 32,
		MemoryCheck: amp.MemoryOff, TopK: -1, DeviceSpeed: t4Speed})
	if err != nil {
		t.Fatal(err)
	}
	if res.Enumerated != 53 {
		t.Errorf("enumerated %d, want AMP's 53", res.Enumerated)
	}
	for _, c := range res.Candidates[:5] {
		if c.DP == 16 {
			t.Errorf("dp = 16 ranked %d, want outside the top 5", c.Rank)
		}
	}
	ok := false
	for _, c := range res.Candidates[:3] {
		ok = ok || (c.MBS == 1 && (c.PP == 4 || c.PP == 8) && c.TMP == 1)
	}
	if !ok {
		t.Errorf("no mbs=1, pp∈{4,8}, tmp=1 candidate in the top 3: %+v", res.Candidates[:3])
	}
	// Megatron's heuristic (the largest dp that fits) picks dp = 16, far slower.
	if res.Megatron == nil || res.Megatron.DP != 16 || res.Megatron.IterationTimeS < 3*res.Candidates[0].IterationTimeS {
		t.Errorf("Megatron's pick %+v, want dp = 16 at least 3× slower than %v", res.Megatron, res.Candidates[0].IterationTimeS)
	}
}

// The memory filter never returns a candidate over capacity: on random models and
// clusters, under rotor and drop, every stage of every candidate fits its devices.
func TestMemoryFilterNeverOverCapacity(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 26))
	n := 40
	if testing.Short() {
		n = 12
	}
	recomputed := map[string]int{}
	for trial := range n {
		m := randomModel(r)
		c := randomCluster(t, r)
		for _, check := range []string{amp.MemoryRotor, amp.MemoryDrop} {
			res, err := amp.Search(m, c, amp.Options{GlobalBatch: int64(4 << r.IntN(4)), MemoryCheck: check, TopK: -1,
				Cut: []string{amp.CutAMP, amp.CutBest}[r.IntN(2)], Optimizer: "adam"})
			if errors.Is(err, chainplan.ErrInfeasible) {
				continue // nothing fits: also a correct answer
			} else if err != nil {
				t.Fatalf("trial %d (%s): %v", trial, check, err)
			}
			// Each candidate over capacity is either made to fit by rotor or dropped.
			if res.Checkpointed+res.Dropped != res.OverCapacity || (check == amp.MemoryDrop && res.Checkpointed != 0) {
				t.Fatalf("trial %d (%s): %d over capacity, %d made to fit by rotor, %d dropped", trial, check, res.OverCapacity, res.Checkpointed, res.Dropped)
			}
			for _, cand := range res.Candidates {
				if !cand.Fits {
					t.Fatalf("trial %d (%s): candidate %+v does not fit", trial, check, cand)
				}
				// The pipesim check agrees with the filter on the micro-batches in flight.
				if sim := cand.Simulated; sim != nil {
					for j, st := range sim.Stages {
						if st.InFlight > cand.Stages[j].InFlight {
							t.Fatalf("trial %d (%s): stage %d held %d in flight, the filter assumed %d", trial, check, j, st.InFlight, cand.Stages[j].InFlight)
						}
						if st.Recompute != "" {
							recomputed[st.Recompute]++
						}
					}
				} else if cand.PP > 1 {
					t.Fatalf("trial %d (%s): candidate %+v not simulated", trial, check, cand)
				}
				for _, st := range cand.Stages {
					if st.MemoryBytes > st.CapacityBytes {
						t.Fatalf("trial %d (%s): stage %+v over capacity", trial, check, st)
					}
				}
			}
		}
	}
	t.Logf("checkpointed stages simulated: %v", recomputed)
	if recomputed[amp.RecomputeRotor] == 0 {
		t.Errorf("no checkpointed stage simulated with rotor's sequence (%v): the trials miss the case", recomputed)
	}
}

// More bandwidth is never slower: scaling every bandwidth of the cluster up never raises
// the best predicted iteration time (nor any candidate's).
func TestMoreBandwidthNeverSlower(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 8))
	for trial := range 30 {
		m := randomModel(r)
		c := randomCluster(t, r)
		faster := *c
		faster.Nodes = append([]cluster.Node(nil), c.Nodes...)
		for i := range faster.Nodes {
			faster.Nodes[i].IntraBandwidth *= 1 + 3*r.Float64()
			faster.Nodes[i].InterBandwidth *= 1 + 3*r.Float64()
		}
		fc, err := cluster.New(faster)
		if err != nil {
			t.Fatal(err)
		}
		o := amp.Options{GlobalBatch: 16, MemoryCheck: amp.MemoryOff, TopK: -1, Optimizer: "none"}
		slow, err1 := amp.Search(m, c, o)
		fast, err2 := amp.Search(m, fc, o)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if fast.Candidates[0].IterationTimeS > slow.Candidates[0].IterationTimeS*(1+1e-12) {
			t.Fatalf("trial %d: best %v with more bandwidth, %v before", trial, fast.Candidates[0].IterationTimeS, slow.Candidates[0].IterationTimeS)
		}
		times := map[amp.Degrees]float64{}
		for _, cand := range slow.Candidates {
			times[amp.Degrees{PP: cand.PP, DP: cand.DP, TMP: cand.TMP, MBS: cand.MBS}] = cand.IterationTimeS
		}
		for _, cand := range fast.Candidates {
			if before := times[amp.Degrees{PP: cand.PP, DP: cand.DP, TMP: cand.TMP, MBS: cand.MBS}]; cand.IterationTimeS > before*(1+1e-12) {
				t.Fatalf("trial %d: %+v slower with more bandwidth (%v > %v)", trial, cand, cand.IterationTimeS, before)
			}
		}
	}
}

// randomModel returns a chain-like model of 3..12 layers with measured memory.
func randomModel(r *rand.Rand) *workload.Model {
	m := &workload.Model{Name: "random", BatchSize: 4, DTypeBytes: 4, InputBytes: int64(1+r.IntN(64)) << 20,
		Known: workload.FieldMemory}
	prev := m.InputBytes
	for range 3 + r.IntN(10) {
		out := int64(1+r.IntN(64)) << 20
		m.Layers = append(m.Layers, workload.Layer{Name: "l", FwdTimeS: 1e-3 * (1 + 9*r.Float64()),
			BwdTimeS: 2e-3 * (1 + 9*r.Float64()), InBytes: prev, OutBytes: out, SavedBytes: out * int64(1+r.IntN(4)),
			WeightBytes: int64(r.IntN(512)) << 20})
		prev = out
	}
	m.Loss.FwdTime, m.Loss.BwdTime = 1e-4, 1e-4
	return m
}

// randomCluster returns 1..4 nodes of 1, 2 or 4 devices of 2..16 GiB.
func randomCluster(tb testing.TB, r *rand.Rand) *cluster.Cluster {
	tb.Helper()
	per := []int{1, 2, 4}[r.IntN(3)]
	c := cluster.Cluster{Name: "random", Contention: cluster.Contention{Mode: cluster.ContentionAuto},
		IntraLatencyS: 1e-6 * r.Float64(), InterLatencyS: 1e-5 * r.Float64()}
	for range 1 + r.IntN(4) {
		c.Nodes = append(c.Nodes, cluster.Node{Name: "", DeviceType: []string{"A", "B"}[r.IntN(2)], Devices: per,
			MemoryBytes: int64(2+r.IntN(15)) << 30, IntraBandwidth: math.Pow(10, 10+r.Float64()),
			InterBandwidth: math.Pow(10, 9+r.Float64()), NICs: 1})
	}
	for i := range c.Nodes {
		c.Nodes[i].Name = string(rune('a' + i))
	}
	out, err := cluster.New(c)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}
