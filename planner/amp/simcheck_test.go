package amp_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/chainplan/chainplan/planner/amp"
	"github.com/chainplan/chainplan/planner/cluster"
	"github.com/chainplan/chainplan/planner/workload"
)

// uniformModel is pp identical layers of forward f and backward b, with no activation
// crossing a boundary (free transfers) and no loss: the pipeline of the textbook.
func uniformModel(layers int, f, b float64) *workload.Model {
	m := &workload.Model{Name: "uniform", BatchSize: 1, DTypeBytes: 4, Known: workload.FieldMemory}
	for range layers {
		m.Layers = append(m.Layers, workload.Layer{Name: "layer", FwdTimeS: f, BwdTimeS: b, SavedBytes: 1 << 20,
			WeightBytes: 1 << 20})
	}
	return m
}

// The simulated pipeline of pp equal stages of f + b, N micro-batches and free transfers
// lasts (N + pp − 1)·(f + b) under 1F1B with a flush and under GPipe alike: the first
// micro-batch's forwards and the last one's backwards cross the pp stages, every other
// micro-batch adds one stage time at the bottleneck. Eq. 5 says the same, so the check
// finds no divergence.
func TestSimCheckUniformPipeline(t *testing.T) {
	const pp, f, b = 4, 1e-3, 2e-3
	c, err := cluster.New(cluster.Cluster{Name: "one-node", Contention: cluster.Contention{Mode: cluster.ContentionAuto},
		Nodes: []cluster.Node{{Name: "n", DeviceType: "X", Devices: pp, MemoryBytes: 16 << 30, IntraBandwidth: 1e11,
			InterBandwidth: 1e10, NICs: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, schedule := range []string{amp.Schedule1F1B, amp.ScheduleGPipe} {
		for _, n := range []int{1, 3, 8} {
			res, err := amp.Search(uniformModel(pp, f, b), c, amp.Options{GlobalBatch: int64(n), TMPMax: 1, TopK: -1,
				Optimizer: "none", Schedule: schedule})
			if err != nil {
				t.Fatal(err)
			}
			var cand *amp.Candidate
			for i := range res.Candidates {
				if x := &res.Candidates[i]; x.PP == pp && x.MBS == 1 {
					cand = x
				}
			}
			if cand == nil || cand.Simulated == nil {
				t.Fatalf("%s, N=%d: no checked pp=%d candidate among %+v", schedule, n, pp, res.Candidates)
			}
			want := float64(n+pp-1) * (f + b)
			sim := cand.Simulated
			if math.Abs(sim.PipelineTimeS-want) > 1e-12 || math.Abs(sim.Divergence) > 1e-9 || sim.Microbatches != n {
				t.Errorf("%s, N=%d: simulated %.9g s (divergence %g, %d micro-batches), want (N+pp−1)(f+b) = %.9g s",
					schedule, n, sim.PipelineTimeS, sim.Divergence, sim.Microbatches, want)
			}
			// 1F1B holds min(pp − j, N) micro-batches on stage j, GPipe all N.
			for j, st := range sim.Stages {
				inFlight := min(pp-j, n)
				if schedule == amp.ScheduleGPipe {
					inFlight = n
				}
				if st.InFlight != inFlight || cand.Stages[j].InFlight != inFlight {
					t.Errorf("%s, N=%d, stage %d: %d in flight simulated, %d assumed, want %d", schedule, n, j,
						st.InFlight, cand.Stages[j].InFlight, inFlight)
				}
			}
		}
	}
}

// On the 7B model and the 64-device cluster the check runs on every returned candidate
// with pp > 1 and on Megatron's pick, none on pp = 1; each simulated pipeline lasts at
// least its busiest stage's work, its divergence is the documented ratio, and exactly the
// candidates past the threshold are warned about.
func TestSimCheckEveryCandidate(t *testing.T) {
	res, err := amp.Search(exampleModel(t, "gpt-7b-40"), readCluster(t, "a100-64.yaml"), amp.Options{GlobalBatch: 512})
	if err != nil {
		t.Fatal(err)
	}
	cands := res.Candidates
	if res.Megatron != nil {
		cands = append(cands, *res.Megatron)
	}
	checked := 0
	for _, c := range cands {
		sim := c.Simulated
		if c.PP == 1 {
			if sim != nil {
				t.Errorf("candidate %d: pp = 1 simulated", c.Rank)
			}
			continue
		}
		checked++
		if sim == nil || sim.Microbatches != c.GAS || len(sim.Stages) != c.PP || sim.Schedule != "1f1b-flush" {
			t.Fatalf("candidate %d (pp=%d): check %+v", c.Rank, c.PP, sim)
		}
		var busiest float64
		for _, st := range c.Stages {
			busiest = math.Max(busiest, float64(c.GAS)*st.TimeS)
		}
		if sim.PipelineTimeS < busiest*(1-1e-9) {
			t.Errorf("candidate %d: simulated %v s, less than its busiest stage's work %v s", c.Rank, sim.PipelineTimeS, busiest)
		}
		if d := (sim.PipelineTimeS - c.PipelineTimeS) / c.PipelineTimeS; math.Abs(d-sim.Divergence) > 1e-12 {
			t.Errorf("candidate %d: divergence %v, want %v", c.Rank, sim.Divergence, d)
		}
		warned := false
		for _, w := range res.Warnings {
			warned = warned || (strings.HasPrefix(w, fmt.Sprintf("candidate %d ", c.Rank)) && strings.Contains(w, "pipeline time"))
		}
		if c.Rank > 0 && warned != (math.Abs(sim.Divergence) > amp.SimDivergence) {
			t.Errorf("candidate %d: divergence %+.3f, warned %v", c.Rank, sim.Divergence, warned)
		}
		for j, st := range sim.Stages {
			if st.PeakBytes <= 0 || st.InFlight < 1 || st.InFlight > c.Stages[j].InFlight {
				t.Errorf("candidate %d stage %d: %+v (assumed %d in flight)", c.Rank, j, st, c.Stages[j].InFlight)
			}
		}
	}
	if checked < 5 {
		t.Errorf("%d candidates checked, want the top-10's pipelines", checked)
	}
}
