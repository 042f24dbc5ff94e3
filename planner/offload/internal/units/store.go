package units

import "math"

// Entry is a memoized value of a DP function and the choice that gives it.
type Entry[C any] struct {
	V  float64
	Ch C
}

// Store memoizes one DP function of POFO, C_Δ here and OC in planner/offload (POFO). In the
// continuous mode it is a map keyed by the state K. In the discretized mode it holds slabs,
// each over the grid's states of one (sub-chain, run) or (x, s, run), allocated when first
// written: Vals[p][i] is the value of state i of slab p (NaN: not computed yet) and
// Chs[p][i] its choice.
type Store[K comparable, C any] struct {
	Vals [][]float64
	Chs  [][]C
	size int
	mp   map[K]Entry[C]
}

// Init prepares the store: a map when continuous, else slabs slabs of size entries.
func (st *Store[K, C]) Init(continuous bool, slabs, size int) {
	if continuous {
		st.mp = make(map[K]Entry[C])
		return
	}
	st.size = size
	st.Vals = make([][]float64, slabs)
	st.Chs = make([][]C, slabs)
}

// Alloc allocates slab p, every entry not computed.
func (st *Store[K, C]) Alloc(p int) {
	st.Vals[p] = make([]float64, st.size)
	for i := range st.Vals[p] {
		st.Vals[p][i] = math.NaN()
	}
	st.Chs[p] = make([]C, st.size)
}

// Get returns the memoized entry of a state: by its key k in the continuous mode, by its
// slab p and position i on the grid otherwise (i < 0: off the grid, never memoized).
func (st *Store[K, C]) Get(k K, p, i int) (Entry[C], bool) {
	if st.mp != nil {
		e, ok := st.mp[k]
		return e, ok
	}
	vals := st.Vals[p]
	if vals == nil || i < 0 || math.IsNaN(vals[i]) {
		return Entry[C]{}, false
	}
	return Entry[C]{V: vals[i], Ch: st.Chs[p][i]}, true
}

// Put memoizes the entry of a state (see Get); a state off the grid is not kept.
func (st *Store[K, C]) Put(k K, p, i int, e Entry[C]) {
	if st.mp != nil {
		st.mp[k] = e
		return
	}
	if i < 0 {
		return
	}
	if st.Vals[p] == nil {
		st.Alloc(p)
	}
	st.Vals[p][i], st.Chs[p][i] = e.V, e.Ch
}
