package rotor

import (
	"fmt"

	"github.com/chainplan/chainplan"
)

// sequence rebuilds the operations of C(s, t, m) from the stored choices (Algorithm 4,
// OptRecP). It uses exactly the memory arithmetic of the table (spec pitfall 17), so it
// follows the table and never fails on a finite entry.
func (tb *table) sequence(s, t int, m int64) ([]chainplan.Op, error) {
	if tb.choiceAt(s, t, 0, m) == choiceNone {
		return nil, fmt.Errorf("%w: no schedule for stages %d..%d in %d units", chainplan.ErrInfeasible, s, t, m)
	}
	var seq []chainplan.Op
	var build func(s, t, p int, m int64)
	build = func(s, t, p int, m int64) {
		ch := tb.choiceAt(s, t, p, m)
		switch {
		case ch == choiceNone:
			panic(fmt.Sprintf("rotor: backtrack reached an infeasible entry (%d, %d, %d, plane %d)", s, t, m, p))
		case s == t:
			seq = append(seq, chainplan.Op{Kind: chainplan.FAll, Stage: s}, chainplan.Op{Kind: chainplan.B, Stage: s})
		case ch == choiceAll || ch < choiceNone:
			o := optionOf(ch)
			seq = append(seq, chainplan.Op{Kind: chainplan.FAll, Stage: s, Option: o})
			build(s+1, t, after(tb.c, s), m-held(tb.c, s, o, p))
			seq = append(seq, chainplan.Op{Kind: chainplan.B, Stage: s})
		default:
			sp := int(ch)
			seq = append(seq, chainplan.Op{Kind: chainplan.FCk, Stage: s})
			for k := s + 1; k <= sp; k++ {
				seq = append(seq, chainplan.Op{Kind: chainplan.FNone, Stage: k})
			}
			build(sp+1, t, 0, m-tb.c.A[sp])
			build(s, sp, p, m)
		}
	}
	build(s, t, 0, m)
	return seq, nil
}
