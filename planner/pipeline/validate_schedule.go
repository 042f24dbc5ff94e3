package pipeline

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/chainplan/chainplan/pipeplan"
)

// dependencies checks every edge u→v of one mini-batch (spec §3.4.2, item 1): mini-batch b
// runs o at t_o + (b + h_o)·T, so v may start only once u has ended,
// t_v + h_v·T ≥ t_u + d_u + h_u·T, whatever b. The edges are F_k → CF_k → F_{k+1} (F_k →
// F_{k+1} on one device), F_N → B_N, and B_{k+1} → CB_k → B_k (B_{k+1} → B_k on one device).
func (v *validator) dependencies() {
	n := len(v.p.Stages)
	edge := func(ku pipeplan.OpKind, su int, kv pipeplan.OpKind, sv int) {
		u, w := v.p.Pattern[v.op[ku][su]], v.p.Pattern[v.op[kv][sv]]
		T := v.p.Period
		end := u.Start + u.Duration + float64(u.Shift)*T
		begin := w.Start + float64(w.Shift)*T
		if begin < end-v.eps {
			v.issue(fmt.Sprintf("pattern[%d]", v.op[kv][sv]),
				"%s of stage %d starts at %.9g+(b%+d)T, before %s of stage %d ends at %.9g+(b%+d)T for the same mini-batch b",
				kv, sv, w.Start, w.Shift, ku, su, u.Start+u.Duration, u.Shift)
		}
	}
	for k := range n - 1 {
		if v.crosses(k) {
			edge(pipeplan.F, k, pipeplan.CF, k)
			edge(pipeplan.CF, k, pipeplan.F, k+1)
			edge(pipeplan.B, k+1, pipeplan.CB, k)
			edge(pipeplan.CB, k, pipeplan.B, k)
		} else {
			edge(pipeplan.F, k, pipeplan.F, k+1)
			edge(pipeplan.B, k+1, pipeplan.B, k)
		}
	}
	edge(pipeplan.F, n-1, pipeplan.B, n-1)
}

// interval is one operation on one resource.
type interval struct {
	start, dur float64
	idx        int // into Plan.Pattern
}

// exclusivity checks each device and each link (spec §3.4.2, item 2): the durations of
// its operations sum to at most T, and their circular intervals [start, start+d) mod T do
// not overlap.
func (v *validator) exclusivity() {
	p := v.p
	onGPU := map[int][]interval{}
	onLink := map[[2]int][]interval{}
	for i, o := range p.Pattern {
		iv := interval{o.Start, o.Duration, i}
		switch o.Op {
		case pipeplan.F, pipeplan.B:
			g := p.Stages[o.Stage].GPU
			onGPU[g] = append(onGPU[g], iv)
		default:
			onLink[v.link(o.Stage)] = append(onLink[v.link(o.Stage)], iv)
		}
	}
	for g := range p.GPUs {
		v.exclusive(fmt.Sprintf("gpu %d", g), onGPU[g])
	}
	links := make([][2]int, 0, len(onLink))
	for l := range onLink {
		links = append(links, l)
	}
	slices.SortFunc(links, func(a, b [2]int) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	for _, l := range links {
		v.exclusive(fmt.Sprintf("link %d-%d", l[0], l[1]), onLink[l])
	}
}

// link returns the unordered device pair that boundary k crosses, lower device first.
func (v *validator) link(k int) [2]int {
	a, b := v.p.Stages[k].GPU, v.p.Stages[k+1].GPU
	return [2]int{min(a, b), max(a, b)}
}

func (v *validator) exclusive(where string, ivs []interval) {
	T := v.p.Period
	var busy float64
	for _, iv := range ivs {
		busy += iv.dur
	}
	if busy > T+v.eps*float64(max(len(ivs), 1)) {
		v.issue(where, "its operations last %.9g in all, more than the period %.9g", busy, T)
	}
	for a := range ivs {
		for b := a + 1; b < len(ivs); b++ {
			x, y := ivs[a], ivs[b]
			for _, shift := range []float64{-T, 0, T} {
				ys := y.start + shift
				if x.start < ys+y.dur-v.eps && ys < x.start+x.dur-v.eps {
					ox, oy := v.p.Pattern[x.idx], v.p.Pattern[y.idx]
					v.issue(where, "%s of stage %d [%.9g, %.9g) overlaps %s of stage %d [%.9g, %.9g) (mod T)",
						ox.Op, ox.Stage, x.start, x.start+x.dur, oy.Op, oy.Stage, y.start, y.start+y.dur)
					break
				}
			}
		}
	}
}

// load computes T_load of spec §1.4 for the plan's allocation, from the model: the
// largest Σ U over the stages of a device and Σ C(ℓ) over the boundaries a link carries
// (summed, spec §7 item 9), and checks T against it.
func (v *validator) load() {
	pr, p := v.pr, v.p
	dev := make([]float64, p.GPUs)
	links := map[[2]int]float64{}
	for k, s := range p.Stages {
		for l := s.First; l <= s.Last; l++ {
			dev[s.GPU] += pr.Layer(l).Fwd + pr.Layer(l).Bwd
		}
		if v.crosses(k) {
			links[v.link(k)] += 2 * float64(pr.Layer(s.Last).Out) / pr.Options().Bandwidth
		}
	}
	bound := slices.Max(dev)
	for _, c := range links {
		bound = math.Max(bound, c)
	}
	v.rep.LoadBound = bound
	if p.Period < bound-v.eps*float64(pr.L()) {
		v.issue("period", "%.9g is below the load bound %.9g of the allocation", p.Period, bound)
	}
}
