package offload

import (
	"math"
	"slices"

	"github.com/chainplan/chainplan"
)

// params are the platform of a replay: bandwidth β (bytes per time unit), memory limit M
// (bytes) and memory model.
type params struct {
	beta  float64
	limit float64
	model chainplan.MemoryModel
}

// times is a timed schedule: start and end of every operation and transfer.
type times struct {
	start, end []float64 // compute operations
	xs, xe     []float64 // transfers
}

func newTimes(ops, xfers int) *times {
	return &times{
		start: make([]float64, ops), end: make([]float64, ops),
		xs: make([]float64, xfers), xe: make([]float64, xfers),
	}
}

// credit is the memory a transfer gives back at time τ, as a function with one or two
// breakpoints: linear from t0 to t1 up to size (fractional model), or a step of size at
// t1 (integral model, t0 = t1).
type credit struct {
	t0, t1, size float64
}

func (c credit) at(τ float64, fractional bool) float64 {
	if fractional {
		switch {
		case τ <= c.t0:
			return 0
		case τ >= c.t1:
			return c.size
		}
		return c.size * (τ - c.t0) / (c.t1 - c.t0)
	}
	if τ >= c.t1 {
		return c.size
	}
	return 0
}

// earliest returns the smallest τ ≥ t0 at which the credits sum to at least need (the
// auxiliary step EARLIEST of spec §5.4), or +Inf when even all of them are not enough.
func earliest(t0, need float64, cs []credit, fractional bool, tol float64) float64 {
	if need <= tol {
		return t0
	}
	sum := func(τ float64) float64 {
		var s float64
		for _, c := range cs {
			s += c.at(τ, fractional)
		}
		return s
	}
	if sum(t0) >= need-tol {
		return t0
	}
	var bps []float64
	for _, c := range cs {
		for _, b := range []float64{c.t0, c.t1} {
			if b > t0 {
				bps = append(bps, b)
			}
		}
	}
	slices.Sort(bps)
	prev, prevV := t0, sum(t0)
	for _, b := range bps {
		v := sum(b)
		if v >= need-tol {
			if !fractional || v == prevV {
				return b
			}
			// The credit is linear between consecutive breakpoints.
			return prev + (b-prev)*(need-prevV)/(v-prevV)
		}
		prev, prevV = b, v
	}
	return math.Inf(1)
}

// timeTol is the tolerance of time comparisons for a schedule whose total compute time is
// total.
func timeTol(total float64) float64 { return 1e-9 * max(1, total) }

// memTol is the tolerance of memory comparisons for the limit, on a schedule whose times
// reach about horizon: a part in 10⁹ of the limit, plus what the rounding of the times
// (about 10⁻¹³ of the horizon after the sums of a long schedule) moves through the link at
// β. The second term matters only when transfers are very short next to the computation:
// the tiny example at 1 GB/s moves 10 bytes in 10⁻⁸ s, so one rounding of a time near 16 s
// shifts a credit by 10⁻⁶ bytes.
func (p params) memTol(horizon float64) float64 {
	return 1e-9*max(1, p.limit) + 1e-13*p.beta*max(1, horizon)
}

// phases holds the two halves of the no-wait timing of spec §5.4: the forward phase in real
// time (ASAP), the backward phase in reverse time (ALAP).
type phases struct {
	t      *times    // forward ops and offloads in real time
	rstart []float64 // reverse start of each backward op (ρ = 0 at the end)
	rend   []float64
	rxs    []float64 // reverse start of each prefetch
	tF, tB float64   // duration of the forward phase (up to the end of F_{L+1}) and of the backward phase
	rF, rB float64   // offload work left after T_F, prefetch work that cannot overlap the backward
	failOp int       // the operation that never fits (−1: none)
}

// noWait computes the no-wait timing of spec §5.4 (Prop. 1): operations and offloads as
// early as possible in the forward phase, operations and prefetches as late as possible in
// the backward phase (run ASAP in reverse time). An operation starts once the memory
// released (or not yet reserved) by the transfers makes room for it; its own inputs never
// count, since it reads them in full.
func (lg *Analysis) noWait(p params) *phases {
	n := len(lg.Ops)
	frac := p.model == chainplan.Fractional
	total := 0.0
	for _, d := range lg.dur {
		total += d
	}
	tol := p.memTol(total)
	ph := &phases{t: newTimes(n, len(lg.xfers)), rstart: make([]float64, n), rend: make([]float64, n),
		rxs: make([]float64, len(lg.xfers)), failOp: -1}
	t := ph.t
	lam := lg.Loss
	nOff := 0
	for nOff < len(lg.xfers) && lg.xfers[nOff].dir == chainplan.TransferOffload {
		nOff++
	}
	dur := func(j int) float64 { return lg.xfers[j].size / p.beta }
	link, next := 0.0, 0
	var cs []credit
	for k := 0; k <= lam; k++ {
		for next < nOff && lg.xfers[next].anchor < k {
			from := 0.0
			if a := lg.xfers[next].anchor; a >= 0 {
				from = t.end[a]
			}
			t.xs[next] = max(link, from)
			t.xe[next] = t.xs[next] + dur(next)
			link = t.xe[next]
			next++
		}
		t0 := 0.0
		if k > 0 {
			t0 = t.end[k-1]
		}
		cs = cs[:0]
		for _, id := range lg.offDuring[k] {
			j := lg.Insts[id].Off
			if j >= next || slices.Contains(lg.Inputs[k], id) {
				continue
			}
			if frac {
				cs = append(cs, credit{t.xs[j], t.xe[j], lg.xfers[j].size})
			} else {
				cs = append(cs, credit{0, lg.releaseTime(t, j, k), lg.xfers[j].size})
			}
		}
		t.start[k] = earliest(t0, lg.static[k]+lg.trans[k]-p.limit, cs, frac, tol)
		if math.IsInf(t.start[k], 1) {
			ph.failOp = k
			return ph
		}
		t.end[k] = t.start[k] + lg.dur[k]
	}
	ph.tF = t.end[lam]
	ph.rF = max(0, link-ph.tF)

	// Backward phase in reverse time: a prefetch is an offload whose "producer" is its
	// reader, so the forward rule run backwards places every prefetch as late as possible.
	rlink, prev := 0.0, len(lg.xfers)-1
	for k := n - 1; k > lam; k-- {
		for prev >= nOff && lg.xfers[prev].anchor > k {
			ph.rxs[prev] = max(rlink, ph.rend[lg.xfers[prev].anchor])
			rlink = ph.rxs[prev] + dur(prev)
			prev--
		}
		r0 := 0.0
		if k < n-1 {
			r0 = ph.rend[k+1]
		}
		cs = cs[:0]
		for _, id := range lg.offDuring[k] {
			j := lg.Insts[id].Pre
			if j < 0 || j <= prev {
				continue
			}
			re := ph.rxs[j] + dur(j)
			if frac {
				cs = append(cs, credit{ph.rxs[j], re, lg.xfers[j].size})
			} else {
				cs = append(cs, credit{0, re, lg.xfers[j].size})
			}
		}
		ph.rstart[k] = earliest(r0, lg.static[k]+lg.trans[k]-p.limit, cs, frac, tol)
		if math.IsInf(ph.rstart[k], 1) {
			ph.failOp = k
			return ph
		}
		ph.rend[k] = ph.rstart[k] + lg.dur[k]
	}
	for ; prev >= nOff; prev-- {
		ph.rxs[prev] = max(rlink, ph.rend[lg.xfers[prev].anchor])
		rlink = ph.rxs[prev] + dur(prev)
	}
	if lam+1 < n {
		ph.tB = ph.rend[lam+1]
	}
	ph.rB = max(0, rlink-ph.tB)
	return ph
}

// releaseTime returns when offload j gives its memory back in the integral model: at its
// end, or at the end of the last operation before k that started reading the tensor
// before the offload ended (spec §5.2).
func (lg *Analysis) releaseTime(t *times, j, k int) float64 {
	rel := t.xe[j]
	tol := timeTol(rel)
	for _, r := range lg.Insts[lg.xfers[j].inst].Readers {
		if r < k && t.start[r] <= t.xe[j]+tol {
			rel = max(rel, t.end[r])
		}
	}
	return rel
}

// place returns the timing of the schedule with the backward phase starting gap after the
// end of the forward phase.
func (lg *Analysis) place(ph *phases, gap float64, beta float64) *times {
	n := len(lg.Ops)
	t := &times{
		start: slices.Clone(ph.t.start), end: slices.Clone(ph.t.end),
		xs: slices.Clone(ph.t.xs), xe: slices.Clone(ph.t.xe),
	}
	mk := ph.tF + gap + ph.tB
	for k := lg.Loss + 1; k < n; k++ {
		t.start[k] = mk - ph.rend[k]
		t.end[k] = mk - ph.rstart[k]
	}
	for j, x := range lg.xfers {
		if x.dir == chainplan.TransferPrefetch {
			t.xe[j] = mk - ph.rxs[j]
			t.xs[j] = t.xe[j] - x.size/beta
		}
	}
	return t
}
