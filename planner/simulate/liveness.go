package simulate

import (
	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/discretize"
)

// The executor's memory, as the exact model counts it (docs/rotor.md, "The exact memory
// model"). Every forward of stage ℓ makes a new copy of a_ℓ. A copy stays in memory while
// one of these holds it:
//
//   - the executor, from the forward that made it to the last operation that reads it: a
//     forward of stage ℓ+1 before the next copy of a_ℓ is made, or the backward of stage
//     ℓ+1 when that stage's graph was filled with a partial option (its recomputation
//     reads the executor's copy of the input);
//   - stage ℓ's graph, from the F_ℓ^all that filled it to B_ℓ, when stage ℓ saved its output;
//   - stage ℓ+1's graph, from the F_{ℓ+1}^all that read it to B_{ℓ+1}, when stage ℓ+1 saved
//     its input.
//
// The rest of ā_ℓ (ā_ℓ − a_ℓ) is in memory from the F_ℓ^all that fills the graph to B_ℓ; a
// partial option keeps less of it until B_ℓ, whose recomputation restores the rest. The
// chain input a_0 is the caller's and stays. With a version 1 chain (every stage saves its
// input and output) this is the memory of rotor spec §2.5, copy for copy.

// copyInfo is one copy of an activation a_ℓ: the stage that made it, its size in units,
// and its holders.
type copyInfo struct {
	stage  int
	size   int64
	lastOp int  // the executor's last reader (its own maker when none)
	graph  int  // number of stage graphs holding it
	live   bool // in memory
}

// readers finds, for the copy each forward makes, the index of the last operation that
// reads it. It also returns, per operation, the index of the copy it reads (-1: the chain
// input; -2: none in memory): a forward's input, and for the backward of a stage filled
// with a partial option the copy of its input that the option's recomputation reads.
func readers(c *discretize.Chain, seq []chainplan.Op) (last []int, reads []int) {
	n := c.N
	last = make([]int, len(seq))
	reads = make([]int, len(seq))
	current := make([]int, n+1) // op index of the current copy of a_ℓ
	for l := range current {
		current[l] = -2
	}
	current[0] = -1
	fill := make([]int, n+1) // the filling F_all of a stage with an option, until its B
	for l := range fill {
		fill[l] = -1
	}
	for i, op := range seq {
		l := op.Stage
		last[i] = i
		reads[i] = -2
		if l < 1 || l > n {
			continue
		}
		switch op.Kind {
		case chainplan.FAll, chainplan.FCk, chainplan.FNone:
			in := current[l-1]
			reads[i] = in
			if in >= 0 {
				last[in] = i
			}
			if op.Kind == chainplan.FAll && op.Option > 0 {
				fill[l] = i
			}
			if l < n {
				current[l] = i
			}
		case chainplan.B:
			if fill[l] >= 0 {
				in := current[l-1]
				reads[i] = in
				if in >= 0 {
					last[in] = i // the option's recomputation reads the input again
				}
				fill[l] = -1
			}
		}
	}
	return last, reads
}
