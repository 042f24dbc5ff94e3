package baseline

import (
	"fmt"
	"time"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/discretize"
	"github.com/chainplan/chainplan/planner/simulate"
)

// SequentialSequence returns the schedule of torch.utils.checkpoint.checkpoint_sequential
// with k segments over the l stages of a chain (rotor spec §4.3, sequence (2.1)).
//
// As in PyTorch, each of the first k−1 segments has floor(l/k) stages and the last one
// takes the remainder plus the loss. The first k−1 segments run forward without a graph,
// keeping only their input (F_ck on the first stage, F_none on the others); the last
// segment runs with F_all and is differentiated at once; then each earlier segment, last
// to first, is recomputed with F_all from its stored input and differentiated:
//
//	F_ck 1 F_none 2 | F_ck 3 F_none 4 | F_all 5 F_all 6 F_all 7(loss) B 7 B 6 B 5 |
//	F_all 3 F_all 4 B 4 B 3 | F_all 1 F_all 2 B 2 B 1          (l = 6, k = 3)
//
// It panics unless 1 ≤ k ≤ l.
func SequentialSequence(l, k int) []chainplan.Op {
	if k < 1 || k > l {
		panic(fmt.Sprintf("baseline: %d segments for %d stages", k, l))
	}
	size := l / k
	var seq []chainplan.Op
	op := func(kind chainplan.OpKind, stage int) { seq = append(seq, chainplan.Op{Kind: kind, Stage: stage}) }
	for j := 0; j < k-1; j++ {
		b, e := j*size+1, (j+1)*size
		op(chainplan.FCk, b)
		for s := b + 1; s <= e; s++ {
			op(chainplan.FNone, s)
		}
	}
	lastStart := (k-1)*size + 1
	for s := lastStart; s <= l+1; s++ {
		op(chainplan.FAll, s)
	}
	for s := l + 1; s >= lastStart; s-- {
		op(chainplan.B, s)
	}
	for j := k - 2; j >= 0; j-- {
		b, e := j*size+1, (j+1)*size
		for s := b; s <= e; s++ {
			op(chainplan.FAll, s)
		}
		for s := e; s >= b; s-- {
			op(chainplan.B, s)
		}
	}
	return seq
}

// Sequential returns the checkpoint_sequential schedule with the given number of segments,
// or, when segments is 0, the segment count in 1..L with the smallest makespan among those
// whose exact peak fits budgetBytes (ties go to the smaller peak, then to fewer segments).
// One segment is the no-recomputation schedule. The thesis tried 2..2√L segments (spec
// pitfall 24); searching every count can only do better.
//
// Errors: an *chainplan.InfeasibleError with the smallest peak over the counts tried, an
// error naming a segment count outside 1..L, or ErrInvalidChain.
// The time complexity is O(L²).
func Sequential(c *chainplan.Chain, budgetBytes int64, segments int) (*chainplan.Plan, error) {
	start := time.Now()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	l := c.Len()
	if segments < 0 || segments > l {
		return nil, fmt.Errorf("%w: sequential: %d segments for a chain of %d stages (want 1..%d, or 0 for the best)",
			chainplan.ErrUnsupported, segments, l, l)
	}
	lo, hi := 1, l
	if segments > 0 {
		lo, hi = segments, segments
	}
	exact := discretize.Exact(c)
	var best *chainplan.Plan
	minPeak := int64(-1)
	for k := lo; k <= hi; k++ {
		seq := SequentialSequence(l, k)
		rep := simulate.Run(exact, seq, -1)
		if !rep.Valid {
			return nil, fmt.Errorf("sequential: internal error: %d segments: %w", k, rep.Err())
		}
		if minPeak < 0 || rep.Peak < minPeak {
			minPeak = rep.Peak
		}
		if rep.Peak > budgetBytes {
			continue
		}
		if best == nil || rep.Makespan < best.Makespan || rep.Makespan == best.Makespan && rep.Peak < best.PeakBytes {
			best = &chainplan.Plan{Algo: "sequential", Feasible: true, Makespan: rep.Makespan, PeakBytes: rep.Peak,
				BudgetBytes: budgetBytes, Segments: k, Sequence: seq}
		}
	}
	if best == nil {
		return nil, &chainplan.InfeasibleError{Algo: "sequential", BudgetBytes: budgetBytes, MinBudgetBytes: minPeak}
	}
	best.SolveMS = float64(time.Since(start).Microseconds()) / 1000
	return best, nil
}
