package pipeline

// planTolerance is the relative slack of the planners' comparisons with T (a group's sum
// against the period): a candidate period computed as one float sum must admit the group
// it came from when the greedy sums the same numbers in another order. It is far below
// the validator's tolerance, so that what the planners accept always validates.
const planTolerance = 1e-12

// Fits reports whether a load x fits in period T, up to a relative 1e-12: the comparison
// every 1F1B* grouping in this module makes.
func Fits(x, T float64) bool { return x <= T*(1+planTolerance) }

// Position is where the 1F1B* grouping of spec §1.7 (phase 1) stands while it walks a
// transformed chain from its end: the current group's number and the load it holds. It is
// the ⊕ of spec §2.2 in exact form, V = (Group−1)·T + Fill: placing an element of load u
// at period T adds it to the current group when the sum fits, else opens the next group.
// Positions are totally ordered (Less), and Add is monotone in the position: a smaller
// position never puts an upstream element in a higher group, so never costs more memory.
// The zero value is not a position; start from Start().
type Position struct {
	Group int
	Fill  float64
}

// Start is the position before the last element: group 1, empty.
func Start() Position { return Position{Group: 1} }

// Add returns the position after placing an element of load u at period T; the element
// belongs to the returned position's Group.
func (p Position) Add(u, T float64) Position {
	if Fits(p.Fill+u, T) {
		return Position{p.Group, p.Fill + u}
	}
	return Position{p.Group + 1, u}
}

// Less orders positions by (Group, Fill).
func (p Position) Less(q Position) bool {
	return p.Group < q.Group || p.Group == q.Group && p.Fill < q.Fill
}

// groups returns the 1F1B* group of each element at period T: from the end, elements join
// the current group while its load fits in T. Group 1 holds the last element. It assumes
// every element fits in T.
func groups(elems []element, T float64) []int {
	grp := make([]int, len(elems))
	pos := Start()
	for k := len(elems) - 1; k >= 0; k-- {
		pos = pos.Add(elems[k].f+elems[k].b, T)
		grp[k] = pos.Group
	}
	return grp
}
