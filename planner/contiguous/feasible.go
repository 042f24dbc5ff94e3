package contiguous

import (
	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/pipeline"
)

// feasible returns a contiguous allocation of pr's layers into at most P stages whose
// 1F1B*(T) pattern fits the memory, or nil when none exists. Stage k is on device k. With
// checkpointing, a stage whose recording does not fit recomputes (mode).
//
// The DP walks the chain from its end, as the 1F1B* grouping does. Its state after
// placing layers j+1..L into q stages is the grouping position (pipeline.Position) at
// boundary j, after the communication pseudo-stage of a_j: the group the next element
// would join and that group's load. Everything upstream depends on the suffix only
// through that position, and a smaller position never costs more (Position.Add is
// monotone and memory grows with the group), so keeping the smallest position of each
// (j, q) is exact. A stage (i..j) is admitted when its load U(i,j) and that of the
// boundary before it, C(i−1), fit in T and its memory with its group index,
// StageMemory(i, j, g), fits M. A stage that does not fit recording its graph may
// recompute at the budget its device has left (mode): a longer load, so a position at
// least as large; the smallest position over the modes that fit is kept, and a smaller
// position still never costs more (its group, hence its memory, is no larger, and its
// recomputing budget no smaller), so the DP stays exact over these modes. O(L²·P) time,
// O(L·P) memory.
func feasible(pr *pipeline.Problem, T float64) []pipeplan.Stage {
	l, p := pr.L(), min(pr.Options().GPUs, pr.L())
	m := pr.Limit()
	// pos[j][q], for 0 ≤ j ≤ L and 0 ≤ q ≤ P; next[j][q] is the end of the stage that
	// starts at layer j+1 on the best path (L+1 marks the root), budget[j][q] its
	// recomputing budget (0: it records its graph).
	pos := make([][]pipeline.Position, l+1)
	next := make([][]int, l+1)
	budget := make([][]int64, l+1)
	for j := range pos {
		pos[j] = make([]pipeline.Position, p+1)
		next[j] = make([]int, p+1)
		budget[j] = make([]int64, p+1)
	}
	next[l][0] = l + 1
	for j := l; j >= 1; j-- {
		for q := range p {
			if next[j][q] == 0 {
				continue
			}
			at := pos[j][q]
			if j == l {
				at = pipeline.Start()
			}
			for i := j; i >= 1; i-- {
				u := pr.U(i, j)
				if !pipeline.Fits(u, T) {
					break // U(i, j) only grows as i decreases
				}
				after := at.Add(u, T)
				var b int64
				if pr.StageMemory(i, j, after.Group) > m {
					var ok bool
					if after, b, ok = recompute(pr, i, j, at, T, m); !ok {
						continue
					}
				}
				if i > 1 {
					c := pr.Comm(i - 1)
					if !pipeline.Fits(c, T) {
						continue
					}
					after = after.Add(c, T)
				}
				if next[i-1][q+1] == 0 || after.Less(pos[i-1][q+1]) {
					pos[i-1][q+1], next[i-1][q+1], budget[i-1][q+1] = after, j, b
				}
			}
		}
	}
	for q := 1; q <= p; q++ {
		if next[0][q] != 0 {
			return backtrack(pr, next, budget, q)
		}
	}
	return nil
}

// recompute returns the grouping position after stage (i..j) when it recomputes (placed
// from position at), with its budget: its group decides how many inputs are in flight
// and so its budget, and its load its group, so the two are iterated to a fixed point
// (the group only grows). ok is false when it does not fit.
func recompute(pr *pipeline.Problem, i, j int, at pipeline.Position, T float64, m int64) (pipeline.Position, int64, bool) {
	g := at.Add(pr.U(i, j), T).Group
	for range 4 {
		load, b, ok := pr.RecomputeFit(i, j, g, m)
		if !ok || !pipeline.Fits(load, T) {
			return pipeline.Position{}, 0, false
		}
		after := at.Add(load, T)
		if after.Group <= g {
			return after, b, true
		}
		g = after.Group
	}
	return pipeline.Position{}, 0, false
}

// backtrack follows the DP's choices from layer 1 with q stages.
func backtrack(pr *pipeline.Problem, next [][]int, budget [][]int64, q int) []pipeplan.Stage {
	var stages []pipeplan.Stage
	for j := 0; q > 0; q-- {
		last := next[j][q]
		st := pipeplan.Stage{First: j + 1, Last: last, GPU: len(stages)}
		if b := budget[j][q]; b > 0 {
			rs, err := pr.RecomputeStage(j+1, last, len(stages), b)
			if err != nil {
				return nil // the fit found this budget: not reached
			}
			st = rs
		}
		stages = append(stages, st)
		j = last
	}
	return stages
}
