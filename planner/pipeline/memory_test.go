package pipeline_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/internal/pipechains"
	"github.com/chainplan/chainplan/planner/pipeline"
	"github.com/chainplan/chainplan/planner/simulate"
)

// stageChain is layers i..j of c as a chain with a free loss: what the device of stage
// (i..j) runs for one mini-batch, the loss standing for the gradient that arrives.
func stageChain(c *chainplan.Chain, i, j int) *chainplan.Chain {
	in := c.InputBytes
	if i > 1 {
		in = c.Stages[i-2].OutBytes
	}
	return &chainplan.Chain{Format: chainplan.ChainFormat, InputBytes: in, Stages: c.Stages[i-1 : j]}
}

// TestTransientsCoverTheSimulator replays the life of one mini-batch on a recording stage
// with the reference simulator (rotor's operation memory: F_all of every layer, the
// gradient, B of every layer) and checks that the model covers it: during the forward at
// most Stored + the forward transient, during the backward at most Stored + the backward
// transient (the simulator also counts a gradient for the chain input, which the pipeline
// never computes).
func TestTransientsCoverTheSimulator(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for n := range 2000 {
		c := pipechains.Random(rng, 1+rng.IntN(8))
		pr, err := pipeline.NewProblem(c, pipeplan.Options{GPUs: 2, MemoryBytes: 1, Bandwidth: 1})
		if err != nil {
			t.Fatal(err)
		}
		i := 1 + rng.IntN(len(c.Stages))
		j := i + rng.IntN(len(c.Stages)-i+1)
		sub := stageChain(c, i, j)
		var seq []chainplan.Op
		for k := 1; k <= j-i+2; k++ {
			seq = append(seq, chainplan.Op{Kind: chainplan.FAll, Stage: k})
		}
		for k := j - i + 2; k >= 1; k-- {
			seq = append(seq, chainplan.Op{Kind: chainplan.B, Stage: k})
		}
		steps, rep := simulate.Trace(sub, seq)
		if !rep.Valid {
			t.Fatal(rep.Err())
		}
		fwd, bwd := pr.Transients(i, j)
		stored := pr.Stored(i, j)
		var fPeak, bPeak int64
		for _, st := range steps {
			if st.Op.Stage == j-i+2 {
				continue // the free loss
			}
			if st.Op.Kind == chainplan.FAll {
				fPeak = max(fPeak, st.During)
			} else {
				during := st.During
				if i == 1 && st.Op.Stage == 1 {
					during -= c.InputBytes // δ_0: never computed by the pipeline
				}
				bPeak = max(bPeak, during)
			}
		}
		if fPeak > stored+fwd || bPeak > stored+bwd {
			t.Fatalf("case %d, stage %d..%d: simulator %d (forward), %d (backward); model %d + %d, %d + %d",
				n, i, j, fPeak, bPeak, stored, fwd, stored, bwd)
		}
	}
}

// TestRecomputeFit: a recomputing stage's backward time is rotor's C_MP at the budget the
// fit chose, its cost replays its sequence within it, and its device's memory with g
// mini-batches in flight fits the limit the fit was asked for. Recomputing never beats
// recording in time, and without checkpointing there is no fit.
func TestRecomputeFit(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	fits := 0
	for n := range 1500 {
		c := pipechains.Random(rng, 1+rng.IntN(8))
		pr, err := pipeline.NewProblem(c, pipeplan.Options{GPUs: 2, MemoryBytes: 1, Bandwidth: 1, Checkpoint: true})
		if err != nil {
			t.Fatal(err)
		}
		i := 1 + rng.IntN(len(c.Stages))
		j := i + rng.IntN(len(c.Stages)-i+1)
		g := 1 + rng.IntN(4)
		limit := pr.StageMemory(i, j, g) * int64(20+rng.IntN(100)) / 100
		load, budget, ok := pr.RecomputeFit(i, j, g, limit)
		if !ok {
			continue
		}
		fits++
		s, err := pr.RecomputeStage(i, j, 1, budget)
		if err != nil {
			t.Fatalf("case %d: %v", n, err)
		}
		cost, err := pr.Cost(s)
		if err != nil {
			t.Fatalf("case %d: %v", n, err)
		}
		if math.Abs(cost.Fwd+cost.Bwd-load) > 1e-9*load {
			t.Fatalf("case %d: fit load %v, cost %v + %v", n, load, cost.Fwd, cost.Bwd)
		}
		if load < pr.U(i, j)*(1-1e-12) {
			t.Fatalf("case %d: recomputing (%v) beats recording (%v)", n, load, pr.U(i, j))
		}
		if m, err := pr.SoleMemory(s, g); err != nil || m > limit {
			t.Fatalf("case %d: memory %d over the limit %d (%v)", n, m, limit, err)
		}
	}
	if fits < 200 {
		t.Fatalf("only %d of 1500 cases fit", fits)
	}
	pr, err := pipeline.NewProblem(pipechains.Costs(1, 2), pipeplan.Options{GPUs: 2, MemoryBytes: 1, Bandwidth: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := pr.RecomputeFit(1, 2, 1, 1<<40); ok {
		t.Fatal("a fit without checkpointing")
	}
}
