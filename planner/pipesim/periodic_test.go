package pipesim_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/contiguous"
	"github.com/chainplan/chainplan/planner/internal/pipechains"
	"github.com/chainplan/chainplan/planner/madpipe"
	"github.com/chainplan/chainplan/planner/pipeline"
	"github.com/chainplan/chainplan/planner/pipesim"
)

// replay simulates plan p on pr with periodic: n micro-batches per mini-batch, k
// mini-batches, as one stream or with a flush per mini-batch.
func replay(tb testing.TB, pr *pipeline.Problem, p *pipeplan.Plan, n, k int, flush bool) *pipesim.Result {
	tb.Helper()
	su, err := pipesim.PlanSetup(pr, p)
	if err != nil {
		tb.Fatal(err)
	}
	r, err := pipesim.Simulate(su, pipesim.Options{Schedule: pipesim.Periodic, Microbatches: n, Minibatches: k, Flush: flush})
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// checkReplay checks that the replay of a valid plan runs one micro-batch per period and
// holds on each device exactly the plan's memory_per_gpu (the validator's time-resolved
// peak): the second, independent check of a plan.
func checkReplay(t *testing.T, what string, pr *pipeline.Problem, p *pipeplan.Plan) {
	t.Helper()
	maxShift := 0
	for _, o := range p.Pattern {
		maxShift = max(maxShift, o.Shift)
	}
	k := 4*(maxShift+len(p.Stages)) + 8 // enough mini-batches of one micro-batch for the steady state
	r := replay(t, pr, p, 1, k, false)
	if math.Abs(r.MicrobatchPeriod-p.Period) > 1e-9*p.Period {
		t.Fatalf("%s: simulated period %.12g, the plan's %.12g\n%v", what, r.MicrobatchPeriod, p.Period, p.Pattern)
	}
	for g, d := range r.PerDevice {
		if d.PeakBytes != p.MemoryPerGPU[g] {
			t.Fatalf("%s: device %d holds %d bytes at its peak, the plan says %d", what, g, d.PeakBytes, p.MemoryPerGPU[g])
		}
	}
	if r.VersionDifference < 1 || r.PerStage[0].StoredBytes != pr.Stored(p.Stages[0].First, p.Stages[0].Last) {
		t.Fatalf("%s: v = %d, stored %d", what, r.VersionDifference, r.PerStage[0].StoredBytes)
	}
	// As steps of the runner (flush per mini-batch), a step holds at most the steady
	// state's memory, and exactly it once the step is long enough to reach it.
	long := replay(t, pr, p, 2*maxShift+8, 2, true)
	short := replay(t, pr, p, 2, 2, true)
	for g := range r.PerDevice {
		if long.PerDevice[g].PeakBytes != p.MemoryPerGPU[g] || short.PerDevice[g].PeakBytes > p.MemoryPerGPU[g] {
			t.Fatalf("%s: device %d holds %d (long steps) and %d (short) with a flush, the plan %d", what, g,
				long.PerDevice[g].PeakBytes, short.PerDevice[g].PeakBytes, p.MemoryPerGPU[g])
		}
	}
	if long.VersionDifference != 1 || !near(long.Makespan, 2*long.Period) {
		t.Fatalf("%s: with a flush v = %d, makespan %v for two steps of %v", what, long.VersionDifference, long.Makespan, long.Period)
	}
}

// TestReplayOneFOneBStar replays the 1F1B* plans of 2,000 random contiguous partitions at
// random periods from their best one up (spec §1.7 of madpipe.md).
func TestReplayOneFOneBStar(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 11))
	cases := 2000
	if testing.Short() {
		cases = 400
	}
	for i := range cases {
		l := 1 + rng.IntN(9)
		c := pipechains.Random(rng, l)
		opts := pipeplan.Options{GPUs: 1 + rng.IntN(min(l, 5)), MemoryBytes: 1 << 50, Bandwidth: 5 + 200*rng.Float64(), WeightCopies: 1 + rng.IntN(3)}
		if rng.IntN(2) == 0 {
			opts.ActivationModel = pipeplan.ActivationsInput
		}
		pr, err := pipeline.NewProblem(c, opts)
		if err != nil {
			t.Fatal(err)
		}
		stages := randomPartition(rng, l, opts.GPUs)
		best, ok := pipeline.BestPeriod(pr, stages)
		if !ok {
			t.Fatalf("case %d: no period", i)
		}
		T := best * (1 + 2*rng.Float64()*float64(rng.IntN(2)))
		p, err := pipeline.OneFOneBStar(pr, stages, T)
		if err != nil {
			t.Fatal(err)
		}
		checkReplay(t, fmt.Sprintf("case %d (%v at T=%g)", i, stages, T), pr, p)
	}
}

// randomPartition cuts l layers into 1..gpus contiguous stages, stage k on device k.
func randomPartition(rng *rand.Rand, l, gpus int) []pipeplan.Stage {
	n := 1 + rng.IntN(min(l, gpus))
	cuts := rng.Perm(l - 1)[:n-1]
	slices.Sort(cuts)
	var out []pipeplan.Stage
	first := 1
	for k, c := range append(cuts, l-1) {
		out = append(out, pipeplan.Stage{First: first, Last: c + 1, GPU: k})
		first = c + 2
	}
	return out
}

// TestReplayMadPipe replays MadPipe's plans (its own, non-contiguous ones among them: a
// device holding several stages, links shared by the boundaries between two devices) on
// random problems: the period and each device's memory of the plan.
func TestReplayMadPipe(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 13))
	cases, own := 40, 0
	if testing.Short() {
		cases = 15
	}
	for i := range cases {
		c := pipechains.Random(rng, 3+rng.IntN(6))
		opts := pipeplan.Options{GPUs: 2 + rng.IntN(3), Bandwidth: 20 + 200*rng.Float64(), WeightCopies: 2 + rng.IntN(2)}
		pr, err := pipeline.NewProblem(c, opts)
		if err != nil {
			t.Fatal(err)
		}
		hi, err := contiguous.MinMemory(pr)
		if err != nil {
			t.Fatal(err)
		}
		pr = pr.WithMemory(hi + rng.Int64N(3*hi))
		p, err := madpipe.Solve(pr, madpipe.Options{TimeLimit: 5 * time.Second})
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if p.Chosen == madpipe.ChosenMadPipe {
			own++
		}
		checkReplay(t, fmt.Sprintf("case %d (%s, %v)", i, p.Chosen, p.Stages), pr, p)
	}
	if own == 0 {
		t.Fatalf("no case replayed a plan of MadPipe's own")
	}
}

// TestReplayRevealsBadPlans: a plan whose period is below what its order allows runs
// slower than it says, and one whose order contradicts its dependencies deadlocks.
func TestReplayRevealsBadPlans(t *testing.T) {
	c := pipechains.Chain([]float64{1, 2, 1}, []float64{2, 3, 2}, []int64{5, 5, 5}, []int64{4, 4, 4, 4})
	pr, err := pipeline.NewProblem(c, pipeplan.Options{GPUs: 3, MemoryBytes: 1 << 40, Bandwidth: 4})
	if err != nil {
		t.Fatal(err)
	}
	stages := stagesOf(3)
	T, _ := pipeline.BestPeriod(pr, stages)
	p, err := pipeline.OneFOneBStar(pr, stages, T)
	if err != nil {
		t.Fatal(err)
	}
	fast := *p
	fast.Period = 0.8 * T
	if r := replay(t, pr, &fast, 1, 40, false); r.MicrobatchPeriod <= fast.Period*1.01 {
		t.Fatalf("a plan claiming period %v replays at %v", fast.Period, r.MicrobatchPeriod)
	}
	broken := *p
	broken.Pattern = slices.Clone(p.Pattern)
	i := broken.Find(pipeplan.B, 2)
	broken.Pattern[i].Shift -= 3 // the last stage's backward before its forward
	su, err := pipesim.PlanSetup(pr, &broken)
	if err != nil {
		t.Fatal(err)
	}
	_, err = pipesim.Simulate(su, pipesim.Options{Schedule: pipesim.Periodic, Microbatches: 1, Minibatches: 8})
	if !errors.Is(err, chainplan.ErrInvalidPlan) {
		t.Fatalf("a plan whose backward precedes its forward: %v, want ErrInvalidPlan", err)
	}
}
