package multichain

import (
	"github.com/chainplan/chainplan"
)

// prune removes the forwards whose output nothing needs: a mapped linear schedule has them
// when rotor recomputes a tower's tail after the loss only to rebuild a boundary value for
// the next tower's backward, since the towers need the tail again only for their own
// backward and the next tower's input is already in memory.
//
// A forward is dead when every operation that reads its output is dead (or none does),
// readers being taken in the schedule as it was: the value each operation reads is the
// one present at that point of the unpruned schedule. The chain of a dead recomputation
// thus goes as a whole, its first forward included, whose input (a checkpoint) stays as it
// stayed before. The replay that follows checks the result.
//
// It takes O(len(seq)) time.
func prune(mc *chainplan.MultiChain, seq []chainplan.Op) []chainplan.Op {
	dead := deadForwards(mc, seq)
	if dead == nil {
		return seq
	}
	kept := make([]chainplan.Op, 0, len(seq))
	for i, o := range seq {
		if !dead[i] {
			kept = append(kept, o)
		}
	}
	return kept
}

// deadForwards marks the dead forwards of seq, or returns nil when there is none. It
// follows the values the replay keeps (simulate.RunMulti): per branch and position, the
// plain activation and the saved tensors present, each tagged with the operation that made
// it (−1: the tower input), and records which operations read each value.
func deadForwards(mc *chainplan.MultiChain, seq []chainplan.Op) []bool {
	type slot struct{ plain, bar []int } // producer of the present value, −2 when absent
	const absent = -2
	br := make([]slot, mc.K())
	for j := range br {
		n := mc.Branches[j].Len() + 1
		br[j] = slot{plain: make([]int, n), bar: make([]int, n)}
		for q := range n {
			br[j].plain[q], br[j].bar[q] = absent, absent
		}
		br[j].plain[0] = -1
	}
	readers := make([][]int, len(seq))
	read := func(p, by int) {
		if p >= 0 {
			readers[p] = append(readers[p], by)
		}
	}
	// input returns the producer of a_q as a forward or the loss reads it: the plain copy,
	// else the one inside ā_q.
	input := func(s slot, q int) int {
		if s.plain[q] != absent {
			return s.plain[q]
		}
		return s.bar[q]
	}
	for i, o := range seq {
		if o.Branch == 0 {
			for j := range br {
				l := mc.Branches[j].Len()
				if o.Kind == chainplan.FAll {
					read(input(br[j], l), i)
				} else {
					br[j].plain[l] = absent
				}
			}
			continue
		}
		s, q := br[o.Branch-1], o.Stage
		switch o.Kind {
		case chainplan.FAll:
			read(input(s, q-1), i)
			s.bar[q] = i
		case chainplan.FCk:
			read(input(s, q-1), i)
			s.plain[q] = i
		case chainplan.FNone:
			read(s.plain[q-1], i)
			s.plain[q-1], s.plain[q] = absent, i
		case chainplan.B:
			read(s.bar[q], i)
			read(input(s, q-1), i)
			s.bar[q], s.plain[q-1] = absent, absent
		}
	}
	var dead []bool
	isDead := func(i int) bool { return dead != nil && dead[i] }
	for i := len(seq) - 1; i >= 0; i-- { // readers come after what they read
		if o := seq[i]; o.Branch == 0 || o.Kind == chainplan.B || o.Kind == chainplan.FreeGrad {
			continue
		}
		live := false
		for _, r := range readers[i] {
			if !isDead(r) {
				live = true
				break
			}
		}
		if !live {
			if dead == nil {
				dead = make([]bool, len(seq))
			}
			dead[i] = true
		}
	}
	return dead
}
