package contiguous_test

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/contiguous"
	"github.com/chainplan/chainplan/planner/internal/pipechains"
	"github.com/chainplan/chainplan/planner/pipeline"
)

// partitions calls visit with every partition of layers 1..l into at most p contiguous
// stages, stage k on device k: 2^(l−1) compositions, cut to p parts.
func partitions(l, p int, visit func([]pipeplan.Stage)) {
	var rec func(first int, stages []pipeplan.Stage)
	rec = func(first int, stages []pipeplan.Stage) {
		if first > l {
			visit(stages)
			return
		}
		if len(stages) == p {
			return
		}
		for last := first; last <= l; last++ {
			rec(last+1, append(stages, pipeplan.Stage{First: first, Last: last, GPU: len(stages)}))
		}
	}
	rec(1, nil)
}

// bruteForce returns the smallest BestPeriod over every contiguous allocation, or +Inf.
func bruteForce(pr *pipeline.Problem) float64 {
	best := math.Inf(1)
	partitions(pr.L(), pr.Options().GPUs, func(st []pipeplan.Stage) {
		if t, ok := pipeline.BestPeriod(pr, st); ok {
			best = min(best, t)
		}
	})
	return best
}

// bruteUnconstrained returns the smallest largest load (stage or boundary) over every
// contiguous allocation: the optimum without a memory limit.
func bruteUnconstrained(pr *pipeline.Problem) float64 {
	best := math.Inf(1)
	partitions(pr.L(), pr.Options().GPUs, func(st []pipeplan.Stage) {
		var load float64
		for k, s := range st {
			load = max(load, pr.U(s.First, s.Last))
			if k > 0 {
				load = max(load, pr.Comm(s.First-1))
			}
		}
		best = min(best, load)
	})
	return best
}

// bruteMinMemory returns the smallest memory per device at which some contiguous
// allocation has a plan, searched over memory with BestPeriod alone.
func bruteMinMemory(pr *pipeline.Problem) int64 {
	lo, hi := int64(0), int64(1)
	for math.IsInf(bruteForce(pr.WithMemory(hi)), 1) {
		hi *= 2
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		if math.IsInf(bruteForce(pr.WithMemory(mid)), 1) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// TestBalanced compares Balanced with every partition into exactly n stages on 2,000
// random chains: the same largest load, exactly n stages covering the chain.
func TestBalanced(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 21))
	for c := range 2000 {
		l := 1 + rng.IntN(8)
		n := 1 + rng.IntN(l)
		pr, err := pipeline.NewProblem(pipechains.Random(rng, l), pipeplan.Options{GPUs: n, Bandwidth: 5 + 100*rng.Float64()})
		if err != nil {
			t.Fatal(err)
		}
		load := func(st []pipeplan.Stage) float64 {
			var worst float64
			for _, s := range st {
				worst = max(worst, pr.U(s.First, s.Last), pr.Comm(s.First-1))
			}
			return worst
		}
		got := contiguous.Balanced(pr, n)
		if len(got) != n || got[0].First != 1 || got[n-1].Last != l {
			t.Fatalf("case %d: %v is not %d stages of %d layers", c, got, n, l)
		}
		for k := 1; k < n; k++ {
			if got[k].First != got[k-1].Last+1 || got[k].GPU != k {
				t.Fatalf("case %d: %v is not contiguous", c, got)
			}
		}
		best := math.Inf(1)
		for mask := range 1 << (l - 1) { // a cut after layer b+1 where bit b is set
			if bits.OnesCount(uint(mask)) != n-1 {
				continue
			}
			var st []pipeplan.Stage
			first := 1
			for b := range l - 1 {
				if mask&(1<<b) != 0 {
					st = append(st, pipeplan.Stage{First: first, Last: b + 1, GPU: len(st)})
					first = b + 2
				}
			}
			st = append(st, pipeplan.Stage{First: first, Last: l, GPU: len(st)})
			best = min(best, load(st))
		}
		if load(got) != best {
			t.Fatalf("case %d: load %v, best over partitions %v", c, load(got), best)
		}
	}
}
