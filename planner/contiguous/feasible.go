package contiguous

import (
	"github.com/chainplan/chainplan/planner/pipeline"
)

// feasible returns a contiguous allocation of pr's layers into at most P stages whose
// 1F1B*(T) pattern fits the memory, or nil when none exists. Stage k is on device k.
//
// The DP walks the chain from its end, as the 1F1B* grouping does. Its state after
// placing layers j+1..L into q stages is the grouping position (pipeline.Position) at
// boundary j, after the communication pseudo-stage of a_j: the group the next element
// would join and that group's load. Everything upstream depends on the suffix only
// through that position, and a smaller position never costs more (Position.Add is
// monotone and memory grows with the group), so keeping the smallest position of each
// (j, q) is exact. A stage (i..j) is admitted when its load U(i,j) and that of the
// boundary before it, C(i−1), fit in T and its memory with its group index,
// StageMemory(i, j, g), fits M. O(L²·P) time, O(L·P) memory.
func feasible(pr *pipeline.Problem, T float64) []pipeline.Stage {
	l, p := pr.L(), min(pr.Options().GPUs, pr.L())
	m := pr.Options().MemoryBytes
	// pos[j][q], for 0 ≤ j ≤ L and 0 ≤ q ≤ P; next[j][q] is the end of the stage that
	// starts at layer j+1 on the best path (L+1 marks the root).
	pos := make([][]pipeline.Position, l+1)
	next := make([][]int, l+1)
	for j := range pos {
		pos[j] = make([]pipeline.Position, p+1)
		next[j] = make([]int, p+1)
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
				if pr.StageMemory(i, j, after.Group) > m {
					continue
				}
				if i > 1 {
					c := pr.Comm(i - 1)
					if !pipeline.Fits(c, T) {
						continue
					}
					after = after.Add(c, T)
				}
				if next[i-1][q+1] == 0 || after.Less(pos[i-1][q+1]) {
					pos[i-1][q+1], next[i-1][q+1] = after, j
				}
			}
		}
	}
	for q := 1; q <= p; q++ {
		if next[0][q] != 0 {
			return backtrack(next, q)
		}
	}
	return nil
}

// backtrack follows the DP's choices from layer 1 with q stages.
func backtrack(next [][]int, q int) []pipeline.Stage {
	var stages []pipeline.Stage
	for j := 0; q > 0; q-- {
		last := next[j][q]
		stages = append(stages, pipeline.Stage{First: j + 1, Last: last, GPU: len(stages)})
		j = last
	}
	return stages
}
