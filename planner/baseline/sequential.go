package baseline

import (
	"fmt"
	"math"
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
	seq := make([]chainplan.Op, 0, 3*l+2) // each stage runs at most three operations, the loss two
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
// The time complexity is O(L²) (O(L) with segments given), the memory O(L): each count is
// replayed and only its makespan and peak are kept, then the chosen sequence is built again.
func Sequential(c *chainplan.Chain, budgetBytes int64, segments int) (*chainplan.Plan, error) {
	start := time.Now()
	cands, err := sequentialCandidates(c, segments)
	if err != nil {
		return nil, err
	}
	best := pickSequential(cands, budgetBytes)
	if best == nil {
		return nil, &chainplan.InfeasibleError{Algo: "sequential", BudgetBytes: budgetBytes, MinBudgetBytes: minPeak(cands)}
	}
	return best.plan(c, budgetBytes, start), nil
}

// SequentialMinBudget returns the smallest budget at which Sequential finds a schedule
// with the given segments (0: any count), and at least 1: the smallest exact peak over
// the counts it tries. Errors are Sequential's.
func SequentialMinBudget(c *chainplan.Chain, segments int) (int64, error) {
	cands, err := sequentialCandidates(c, segments)
	if err != nil {
		return 0, err
	}
	return max(1, minPeak(cands)), nil
}

// SequentialMin returns Sequential's plan at SequentialMinBudget's budget, replaying each
// segment count once.
func SequentialMin(c *chainplan.Chain, segments int) (*chainplan.Plan, error) {
	start := time.Now()
	cands, err := sequentialCandidates(c, segments)
	if err != nil {
		return nil, err
	}
	budget := max(1, minPeak(cands))
	return pickSequential(cands, budget).plan(c, budget, start), nil
}

// maxSearchOps bounds the operations the search over every segment count replays,
// searchOps: about 3L² for L stages, each replayed in about 0.8 µs on the 2-core reference
// machine (a 5000-stage chain took 60 s), so that the search ends within about a minute and
// a half; it admits chains up to 5773 stages. With the segment count given, the time and
// memory are linear in the chain's length, and nothing is refused.
const maxSearchOps = 1e8

// searchOps is the number of operations the search replays on a chain of l stages: the
// schedule with k segments runs each stage at most three times, the loss twice.
func searchOps(l int) float64 { return float64(l) * float64(3*l+2) }

// sequentialCandidate is the replay of one segment count: its makespan and exact peak.
type sequentialCandidate struct {
	segments  int
	makespan  float64
	peakBytes int64
}

// plan returns the candidate's plan at budgetBytes, its sequence built again.
func (sc *sequentialCandidate) plan(c *chainplan.Chain, budgetBytes int64, start time.Time) *chainplan.Plan {
	return &chainplan.Plan{Algo: "sequential", Feasible: true, Makespan: sc.makespan, PeakBytes: sc.peakBytes,
		BudgetBytes: budgetBytes, Segments: sc.segments, Sequence: SequentialSequence(c.Len(), sc.segments),
		SolveMS: float64(time.Since(start).Microseconds()) / 1000}
}

// sequentialCandidates replays the schedule of every segment count Sequential tries
// (segments, or 1..L when it is 0) in exact bytes, keeping each one's makespan and peak;
// one sequence lives at a time.
func sequentialCandidates(c *chainplan.Chain, segments int) ([]sequentialCandidate, error) {
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
	} else if ops := searchOps(l); ops > maxSearchOps {
		return nil, &chainplan.SizeError{Algo: "sequential", Stages: l,
			What:      "the search over every segment count (replaying each)",
			NeedSteps: ops, LimitSteps: maxSearchOps,
			Fix: fmt.Sprintf("give the segment count, e.g. --segments %d (⌈√L⌉, the classic choice), which replays one schedule",
				sqrtSegments(l))}
	}
	exact := discretize.Exact(c)
	cands := make([]sequentialCandidate, 0, hi-lo+1)
	for k := lo; k <= hi; k++ {
		rep := simulate.Run(exact, SequentialSequence(l, k), -1)
		if !rep.Valid {
			return nil, fmt.Errorf("sequential: internal error: %d segments: %w", k, rep.Err())
		}
		cands = append(cands, sequentialCandidate{segments: k, makespan: rep.Makespan, peakBytes: rep.Peak})
	}
	return cands, nil
}

// pickSequential returns the fastest candidate whose peak fits budgetBytes (ties: the
// smaller peak, then fewer segments), or nil.
func pickSequential(cands []sequentialCandidate, budgetBytes int64) *sequentialCandidate {
	var best *sequentialCandidate
	for i := range cands {
		p := &cands[i]
		if p.peakBytes > budgetBytes {
			continue
		}
		if best == nil || p.makespan < best.makespan || p.makespan == best.makespan && p.peakBytes < best.peakBytes {
			best = p
		}
	}
	return best
}

// minPeak returns the smallest peak of the candidates.
func minPeak(cands []sequentialCandidate) int64 {
	m := cands[0].peakBytes
	for _, p := range cands[1:] {
		m = min(m, p.peakBytes)
	}
	return m
}

// Fallback is what the planners whose tables grow faster than the chain tell the user to
// run instead when a chain of l stages is too long for them: checkpoint_sequential with
// ⌈√L⌉ segments (the classic choice for similar stages, Chen et al. 2016), whose time and
// memory grow linearly with the chain, or no recomputation at all.
func Fallback(l int) string {
	return fmt.Sprintf("use --algo sequential --segments %d (checkpoint_sequential, whose time and memory grow "+
		"linearly with the chain) or --algo store-all", sqrtSegments(l))
}

// sqrtSegments is ⌈√L⌉ segments for a chain of l stages, in 1..l.
func sqrtSegments(l int) int {
	return max(1, min(l, int(math.Ceil(math.Sqrt(float64(l))))))
}
