package madpipe

import (
	"math"

	"github.com/chainplan/chainplan/planner/pipeline"
)

// The grid sizes of the paper (spec §2.6): intervals, one fewer than the values.
const (
	gridT = 100 // t_P: 101 values over [0, U(1,L)]
	gridM = 10  // m_P: 11 values over [0, M]
	gridV = 50  // V: 51 values over [0, Vmax], extended past Vmax
)

// ceilTol is the relative tolerance of ⌈x/T̂⌉ (spec §7 item 7): a sum that should equal a
// multiple of T̂ must not open a group because of rounding.
const ceilTol = 1e-9

// stage is a stage of a phase-1 allocation: layers first..last on a normal device or on
// the special one; a normal stage with a positive budget recomputes within it
// (pipeline.Problem.RecomputeFit).
type stage struct {
	first, last int
	special     bool
	budget      int64
}

// dp is MadPipe-DP (spec §2.3-2.4) for one target period T̂: T(j, p, t_P, m_P, V) is the
// smallest load of an allocation of layers 1..j given p free normal devices, the special
// device's load t_P and estimated memory m_P so far (downstream), and the delay V between
// the end of F_j and the start of B_j. It walks the chain from layer L down to layer 1,
// memoised top-down on the snapped state.
type dp struct {
	prob       *pipeline.Problem
	that       float64
	memory     float64
	gT, gM, gV grid
	memo       map[key]entry
	exactMemo  map[exactKey]entry
	normals    map[normalKey]normalFit // normal stages' loads, by (i, j, V)
	rooms      map[roomKey]float64     // exact mode
	gridRooms  map[key]float64         // on the grids: j, p and V's index packed
	heaviest   []float64               // heaviest[j]: the largest u_F+u_B of layers 1..j
	// floor is a lower bound of every allocation's load (the heaviest layer, an even
	// share of U(1,L)). The DP computes max(T, floor) throughout, which leaves the root's
	// value unchanged (it is at least floor) and lets a state stop at the first option
	// that reaches floor.
	floor float64
	// budget counts the DP's steps and memoised entries against the limits of limits.go;
	// once over, every state answers infeasible at once and run's caller refuses.
	budget dpBudget
}

// key packs a snapped state: j (10 bits), p (8), t, m and v indices (14 bits each).
type key uint64

func packKey(s state) key {
	return key(s.j) | key(s.p)<<10 | key(s.ti)<<18 | key(s.mi)<<32 | key(s.vi)<<46
}

type exactKey struct {
	j, p    int
	t, m, v float64
}

// entry is a memoised DP value: exact, or (bound) only known to be at least val.
type entry struct {
	val     float64
	i       int32 // the chosen last stage (i..j); 0 when infeasible or bound
	special bool
	bound   bool
}

func newDP(prob *pipeline.Problem, that float64, exact bool) *dp {
	return newDPWithin(prob, that, exact, float64(prob.Limit()))
}

// newDPWithin is newDP planning within memory bytes per device instead of the problem's.
func newDPWithin(prob *pipeline.Problem, that float64, exact bool, memory float64) *dp {
	d := &dp{prob: prob, that: that, memory: memory, rooms: map[roomKey]float64{}, gridRooms: map[key]float64{},
		normals: map[normalKey]normalFit{}, budget: newDPBudget()}
	d.heaviest = make([]float64, prob.L()+1)
	for l := 1; l <= prob.L(); l++ {
		d.heaviest[l] = max(d.heaviest[l-1], prob.U(l, l))
	}
	d.floor = max(d.heaviest[prob.L()], prob.TotalWork()/float64(prob.Options().GPUs))
	if exact {
		d.exactMemo = map[exactKey]entry{}
	} else {
		l := prob.L()
		d.gT = newGrid(prob.TotalWork(), gridT)
		d.gM = newGrid(d.memory, gridM)
		d.gV = newGrid(prob.TotalWork()+sumComm(prob, 1, l-1), gridV)
		d.memo = map[key]entry{}
	}
	return d
}

// sumComm returns Σ_{ℓ=from..to} C(ℓ).
func sumComm(prob *pipeline.Problem, from, to int) float64 {
	s := 0.0
	for l := from; l <= to; l++ {
		s += prob.Comm(l)
	}
	return s
}

// groups returns ⌈x/T̂⌉ with the tolerance; the number of T̂-wide groups x spans.
func (d *dp) groups(x float64) float64 { return math.Ceil(x/d.that - ceilTol) }

// oplus is x ⊕ y (spec §2.2): y joins the current group when it fits, otherwise the group
// is closed at its boundary and y opens the next one.
func (d *dp) oplus(x, y float64) float64 {
	if cx := d.groups(x); cx == d.groups(x+y) {
		return x + y
	} else {
		return d.that*cx + y
	}
}

// g is g(i,j,V) = ⌈(V + U(i,j))/T̂⌉, at least 1: the activations a normal stage keeps.
func (d *dp) g(i, j int, v float64) int {
	return int(max(1, d.groups(v+d.prob.U(i, j))))
}

func (d *dp) mem(i, j, g int) float64 { return float64(d.prob.StageMemory(i, j, g)) }

// state is a DP state with its snapped values.
type state struct {
	j, p       int
	t, m, v    float64
	ti, mi, vi int
}

// normalKey and normalFit memoise normal: the stage, V, and its load and budget.
type normalKey struct {
	i, j int
	v    float64
}

type normalFit struct {
	load   float64
	budget int64 // 0: records its graph
	ok     bool
}

// normal returns how stage (i..j) runs on a normal device when V is the delay after it:
// recording its graph with g(i,j,V) mini-batches when 𝓜 fits; otherwise, with
// checkpointing, recomputing at the budget its device has left, whose longer backward
// may put it in a later group (more mini-batches in flight, a smaller budget: iterated to
// a fixed point). ok is false when neither fits.
func (d *dp) normal(i, j int, v float64) normalFit {
	g := d.g(i, j, v)
	if d.mem(i, j, g) <= d.memory { // recording fits: the common case, no memo needed
		return normalFit{load: d.prob.U(i, j), ok: true}
	}
	if !d.prob.Options().Checkpoint {
		return normalFit{}
	}
	k := normalKey{i, j, v}
	if f, ok := d.normals[k]; ok {
		return f
	}
	if d.budget.over {
		return normalFit{}
	}
	var f normalFit
	for range 4 {
		load, budget, ok := d.prob.RecomputeFit(i, j, g, int64(d.memory))
		if !ok {
			break
		}
		if g2 := int(max(1, d.groups(v+load))); g2 > g {
			g = g2
			continue
		}
		f = normalFit{load: load, budget: budget, ok: true}
		break
	}
	if d.budget.keep(normalEntryBytes) {
		d.normals[k] = f
	}
	return f
}

// next returns the state after placing stage (i..j) of s, special or not.
func (d *dp) next(s state, i int, special bool) (state, bool) {
	n := state{j: i - 1, p: s.p, t: s.t, m: s.m, ti: s.ti, mi: s.mi}
	u := d.prob.U(i, s.j)
	if !special {
		u = d.normal(i, s.j, s.v).load
	}
	n.v, n.vi = d.gV.snap(d.oplus(d.oplus(s.v, u), d.prob.Comm(i-1)))
	if !special {
		n.p--
		return n, true
	}
	g := d.g(i, s.j, s.v)
	n.t, n.ti = d.gT.snap(s.t + d.prob.U(i, s.j))
	n.m, n.mi = d.gM.snap(s.m + d.mem(i, s.j, g-1))
	return n, n.m <= d.memory*(1+1e-12)
}

func (d *dp) lookup(s state) (entry, bool) {
	if d.exactMemo != nil {
		e, ok := d.exactMemo[exactKey{s.j, s.p, s.t, s.m, s.v}]
		return e, ok
	}
	e, ok := d.memo[packKey(s)]
	return e, ok
}

func (d *dp) store(s state, e entry) {
	if !d.budget.keep(memoEntryBytes) {
		return
	}
	if d.exactMemo != nil {
		d.exactMemo[exactKey{s.j, s.p, s.t, s.m, s.v}] = e
		return
	}
	d.memo[packKey(s)] = e
}

// solve returns T(s) and the decision achieving it (spec §2.4) when T(s) < cut; otherwise
// an entry marked bound whose value is at least cut, which is all a caller with that cut
// needs (branch and bound: the memo keeps exact values and lower bounds apart, so pruning
// never changes the DP's result).
func (d *dp) solve(s state, cut float64) entry {
	if s.j == 0 {
		return entry{val: max(s.t, d.floor)}
	}
	if d.budget.over {
		return entry{val: math.Inf(1)}
	}
	// Layers 1..j and the special device's load so far share p+1 devices, and the
	// heaviest of those layers loads one of them.
	if lb := max(s.t, (s.t+d.prob.U(1, s.j))/float64(s.p+1), d.heaviest[s.j]); lb >= cut {
		return entry{val: lb, bound: true}
	}
	e, ok := d.lookup(s)
	if ok && (!e.bound || e.val >= cut) {
		return e
	}
	best := entry{val: math.Inf(1)}
	if s.p == 0 {
		// Base case: layers 1..j become one more stage of the special device.
		g := d.g(1, s.j, s.v)
		if m, _ := d.gM.snap(s.m + d.mem(1, s.j, g-1)); m <= d.memory*(1+1e-12) {
			best = entry{val: max(s.t+d.prob.U(1, s.j), d.floor), i: 1, special: true}
		}
		d.store(s, best)
		return best
	}
	// Probe the stage that balances the load first: its value makes a good bar early.
	if i := d.balanced(s); i > 0 {
		if nf := d.normal(i, s.j, s.v); nf.ok {
			if n, _ := d.next(s, i, false); d.fits(n) {
				c := d.prob.Comm(i - 1)
				if val := max(nf.load, c, d.solve(n, min(best.val, cut)).val); val < min(best.val, cut) {
					best = entry{val: val, i: int32(i)}
				}
			}
		}
	}
	for i := s.j; i >= 1 && best.val > d.floor; i-- {
		if !d.budget.step() {
			break
		}
		bar := min(best.val, cut)
		u, c := d.prob.U(i, s.j), d.prob.Comm(i-1)
		if u >= bar {
			break // longer stages only load their device more (recomputing, more still)
		}
		if c >= bar {
			continue
		}
		if nf := d.normal(i, s.j, s.v); nf.ok && nf.load < bar {
			if n, _ := d.next(s, i, false); d.fits(n) {
				if val := max(nf.load, c, d.solve(n, bar).val); val < bar {
					best, bar = entry{val: val, i: int32(i)}, val
				}
			}
		}
		if n, ok := d.next(s, i, true); ok && n.t < bar && d.fits(n) {
			if val := max(n.t, c, d.solve(n, bar).val); val < bar {
				best = entry{val: val, i: int32(i), special: true}
			}
		}
	}
	if best.val >= cut {
		best = entry{val: cut, bound: true}
	}
	d.store(s, best)
	return best
}

// balanced returns the first layer i of the last stage (i..j) whose load is closest above
// an even share of layers 1..j and the special load over the p+1 devices left.
func (d *dp) balanced(s state) int {
	share := (s.t + d.prob.U(1, s.j)) / float64(s.p+1)
	for i := s.j; i >= 1; i-- {
		if d.prob.U(i, s.j) >= share {
			return i
		}
	}
	return 1
}

// run returns MadPipe-DP(T̂) and its allocation in chain order (nil when infeasible).
func (d *dp) run() (float64, []stage) {
	root := state{j: d.prob.L(), p: d.prob.Options().GPUs - 1}
	if d.exactMemo == nil {
		root.ti, root.mi, root.vi = 0, 0, 0
	} else {
		root.ti, root.mi, root.vi = -1, -1, -1
	}
	if !d.fits(root) {
		return math.Inf(1), nil
	}
	val := d.solve(root, math.Inf(1)).val
	if math.IsInf(val, 1) {
		return val, nil
	}
	var rev []stage
	for s := root; s.j > 0; {
		e := d.solve(s, math.Inf(1)) // memoised exact on the optimal path
		i := int(e.i)
		st := stage{first: i, last: s.j, special: e.special}
		if !e.special && s.p > 0 {
			st.budget = d.normal(i, s.j, s.v).budget
		}
		rev = append(rev, st)
		if s.p == 0 {
			break
		}
		s, _ = d.next(s, i, e.special)
	}
	out := make([]stage, len(rev))
	for k, st := range rev {
		out[len(rev)-1-k] = st
	}
	return val, out
}
