package madpipe

import "math"

// room returns the largest memory m_P the special device may already hold for layers
// 1..j to still fit, given p free normal devices and the delay V (−Inf when they cannot
// fit at all). Feasibility does not depend on t_P, and it only gets harder as m_P grows,
// so this table over (j, p, V), far smaller than the DP's, lets solve skip every
// infeasible state without visiting it: a sizeable share of the states at the targets
// T̂ that are too small for the memory.
func (d *dp) room(j, p int, v float64, vi int) float64 {
	if j == 0 {
		return d.memory
	}
	if d.budget.over {
		return math.Inf(-1)
	}
	k := roomKey{j: j, p: p, vi: vi}
	if vi < 0 {
		k.v = v // exact mode
	}
	packed := key(j) | key(p)<<10 | key(vi)<<18
	if vi >= 0 {
		if r, ok := d.gridRooms[packed]; ok {
			return r
		}
	} else if r, ok := d.rooms[k]; ok {
		return r
	}
	best := math.Inf(-1)
	if p == 0 {
		best = d.memory - d.snapMem(d.mem(1, j, d.g(1, j, v)-1))
	} else {
		for i := j; i >= 1 && d.budget.step(); i-- {
			u := d.prob.U(i, j)
			nv, nvi := d.gV.snap(d.oplus(d.oplus(v, u), d.prob.Comm(i-1)))
			g := d.g(i, j, v)
			if nf := d.normal(i, j, v); nf.ok {
				mv, mvi := nv, nvi
				if nf.budget > 0 { // recomputing: a longer load, a later delay
					mv, mvi = d.gV.snap(d.oplus(d.oplus(v, nf.load), d.prob.Comm(i-1)))
				}
				best = max(best, d.room(i-1, p-1, mv, mvi))
			}
			best = max(best, min(d.memory, d.room(i-1, p, nv, nvi))-d.snapMem(d.mem(i, j, g-1)))
			if best >= d.memory {
				break
			}
		}
	}
	switch {
	case !d.budget.keep(roomEntryBytes):
	case vi >= 0:
		d.gridRooms[packed] = best
	default:
		d.rooms[k] = best
	}
	return best
}

type roomKey struct {
	j, p, vi int
	v        float64 // the exact mode's V
}

// snapMem is the grid's rounding of a memory increment: on the grid, snap(m + x) = m +
// snapMem(x) for every grid point m.
func (d *dp) snapMem(x float64) float64 {
	v, _ := d.gM.snap(x)
	return v
}

// fits reports whether state s may be feasible: its m_P within room, up to a tolerance
// that errs towards visiting.
func (d *dp) fits(s state) bool {
	return s.m <= d.room(s.j, s.p, s.v, s.vi)+1e-6*max(d.memory, 1)
}
