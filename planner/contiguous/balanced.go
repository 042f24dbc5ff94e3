package contiguous

import (
	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/pipeline"
)

// Balanced returns the partition of pr's layers into exactly n contiguous stages, stage k
// on device k, that minimises the largest load of a stage U(i,j) or of the boundary before
// it C(i−1): the unconstrained optimum of spec §4.6 with the stage count fixed rather than
// bounded (chainplan pipesim --stages N compares schedules on N stages). Memory is not
// considered. Among partitions of equal load it keeps the one whose last stage starts
// latest. n must be in 1..L; the result has n stages. O(L²·n): the caller checks pr first
// (pipeline.Problem.CheckPlanning).
func Balanced(pr *pipeline.Problem, n int) []pipeplan.Stage {
	l := pr.L()
	n = max(1, min(n, l))
	load := func(i, j int) float64 { return max(pr.U(i, j), pr.Comm(i-1)) }
	// best[q][j]: the smallest largest load of layers 1..j in exactly q stages; from[q][j]
	// the first layer of the last of those stages.
	best := make([][]float64, n+1)
	from := make([][]int, n+1)
	for q := range best {
		best[q] = make([]float64, l+1)
		from[q] = make([]int, l+1)
		for j := range best[q] {
			best[q][j] = -1 // none
		}
	}
	best[0][0] = 0
	for q := 1; q <= n; q++ {
		for j := q; j <= l; j++ {
			for i := q; i <= j; i++ { // the last stage is layers i..j, the others 1..i−1
				if best[q-1][i-1] < 0 {
					continue
				}
				if v := max(best[q-1][i-1], load(i, j)); best[q][j] < 0 || v <= best[q][j] {
					best[q][j], from[q][j] = v, i
				}
			}
		}
	}
	stages := make([]pipeplan.Stage, n)
	for q, j := n, l; q >= 1; q-- {
		i := from[q][j]
		stages[q-1] = pipeplan.Stage{First: i, Last: j, GPU: q - 1}
		j = i - 1
	}
	return stages
}
