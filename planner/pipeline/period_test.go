package pipeline_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/internal/pipechains"
	"github.com/chainplan/chainplan/planner/pipeline"
)

// randomPartition returns a random contiguous partition of l layers into at most p
// stages on distinct, shuffled devices.
func randomPartition(rng *rand.Rand, l, p int) []pipeplan.Stage {
	s := 1 + rng.IntN(min(l, p))
	cuts := rng.Perm(l - 1)[:s-1]
	slices.Sort(cuts)
	devs := rng.Perm(p)
	var st []pipeplan.Stage
	first := 1
	for k, c := range append(cuts, l-1) {
		st = append(st, pipeplan.Stage{First: first, Last: c + 1, GPU: devs[k]})
		first = c + 2
	}
	return st
}

func randomProblem(tb testing.TB, rng *rand.Rand, maxL int) *pipeline.Problem {
	tb.Helper()
	opts := pipeplan.Options{GPUs: 1 + rng.IntN(6), Bandwidth: 10 + 300*rng.Float64(),
		WeightCopies: 2 + rng.IntN(2), MemoryBytes: 200 + rng.Int64N(2000)}
	if rng.IntN(2) == 0 {
		opts.ActivationModel = pipeplan.ActivationsInput
	}
	pr, err := pipeline.NewProblem(pipechains.Random(rng, 1+rng.IntN(maxL)), opts)
	if err != nil {
		tb.Fatal(err)
	}
	return pr
}

// TestOneFOneBStarProperties: on random chains, partitions and periods, every 1F1B*
// pattern is valid for the validator and for the naive unrolled check, which finds the
// same memory peaks; each stage's NCA is its 1F1B* group, so its memory is StageMemory
// with it.
func TestOneFOneBStarProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 1))
	for i := range 2000 {
		pr := randomProblem(t, rng, 10)
		st := randomPartition(rng, pr.L(), pr.Options().GPUs)
		var load float64
		for k, s := range st {
			load = max(load, pr.U(s.First, s.Last))
			if k > 0 {
				load = max(load, pr.Comm(s.First-1))
			}
		}
		T := load * (1 + 3*rng.Float64())
		p, err := pipeline.OneFOneBStar(pr, st, T)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		rep := pipeline.Validate(pr.WithMemory(math.MaxInt64/8), p)
		if !rep.Valid {
			t.Fatalf("case %d: invalid: %v", i, rep.Issues)
		}
		deps, overlaps, peaks := unrolled(pr, p)
		if deps+overlaps > 0 || !slices.Equal(peaks, activationPeaks(rep)) {
			t.Fatalf("case %d: unrolled: %d dependency and %d overlap violations, peaks %v, validator %v",
				i, deps, overlaps, peaks, activationPeaks(rep))
		}
		for k, s := range st {
			if got, want := rep.MemoryPeak[s.GPU], pr.StageMemory(s.First, s.Last, rep.NCA[k]); got != want {
				t.Fatalf("case %d: stage %d: peak %d, StageMemory with NCA %d = %d", i, k, got, rep.NCA[k], want)
			}
		}
	}
}

// TestBestPeriod: at BestPeriod the 1F1B* plan fits the memory (validated); just below
// it, where every stage and link still fits in T, it does not: the validator finds a
// device over the memory, so no smaller period of 1F1B* (hence, by Theorem 15, of any
// 1-periodic pattern) fits.
func TestBestPeriod(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 2))
	var found, missing, lower int
	for range 3000 {
		pr := randomProblem(t, rng, 10)
		st := randomPartition(rng, pr.L(), pr.Options().GPUs)
		// A memory between what one mini-batch per stage needs and what 2S need.
		var one, all int64
		for _, s := range st {
			one = max(one, pr.StageMemory(s.First, s.Last, 1))
			all = max(all, pr.StageMemory(s.First, s.Last, 2*len(st)))
		}
		pr = pr.WithMemory(one - 10 + rng.Int64N(all-one+20))
		T, ok := pipeline.BestPeriod(pr, st)
		if !ok {
			missing++
			// Even one group (all g = 1) is over the memory.
			for _, s := range st {
				if pr.StageMemory(s.First, s.Last, 1) > pr.Options().MemoryBytes {
					ok = true
				}
			}
			if !ok {
				t.Fatalf("no best period for %v, yet one group fits", st)
			}
			continue
		}
		found++
		p, ok, err := pipeline.ScheduleContiguous(pr, st, "test")
		if err != nil || !ok || p.Period != T {
			t.Fatalf("ScheduleContiguous: %v, %v, period %v want %g", err, ok, p, T)
		}
		below := T * (1 - 1e-7)
		q, err := pipeline.OneFOneBStar(pr, st, below)
		if err != nil {
			continue // a stage or link no longer fits in T
		}
		lower++
		if pipeline.Validate(pr, q).Valid {
			t.Fatalf("1F1B* at %.12g < best period %.12g fits: %v", below, T, st)
		}
	}
	if found < 1000 || missing < 50 || lower < 200 {
		t.Errorf("too few cases: %d with a period (%d memory-bound), %d without", found, lower, missing)
	}
}
