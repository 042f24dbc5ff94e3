package pipeline_test

import (
	"math"
	"slices"

	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/pipeline"
)

// unrolled is a second, naive oracle for a structurally sound plan: it lays out enough
// consecutive mini-batches in absolute time to meet every pair of operations at every
// relative offset, then checks each dependency of each mini-batch, every pair of
// intervals on each resource, and counts stored and transient bytes at each operation
// start of a period well inside the window. It returns the number of dependency and overlap
// violations and each device's peak of stored activation and transient bytes.
func unrolled(pr *pipeline.Problem, p *pipeplan.Plan) (deps, overlaps int, peaks []int64) {
	T := p.Period
	eps := 1e-9 * T
	lo, hi := math.MaxInt, math.MinInt
	for _, o := range p.Pattern {
		lo, hi = min(lo, o.Shift), max(hi, o.Shift)
	}
	h := hi - lo
	window := h + 3
	at := func(kind pipeplan.OpKind, k, b int) (float64, float64) {
		o := p.Pattern[p.Find(kind, k)]
		s := o.Start + float64(b+o.Shift)*T
		return s, s + o.Duration
	}
	n := len(p.Stages)
	cross := func(k int) bool { return k+1 < n && p.Stages[k].GPU != p.Stages[k+1].GPU }
	before := func(k1 pipeplan.OpKind, s1 int, k2 pipeplan.OpKind, s2 int, b int) {
		_, end := at(k1, s1, b)
		if start, _ := at(k2, s2, b); start < end-eps {
			deps++
		}
	}
	for b := range window {
		for k := range n - 1 {
			if cross(k) {
				before(pipeplan.F, k, pipeplan.CF, k, b)
				before(pipeplan.CF, k, pipeplan.F, k+1, b)
				before(pipeplan.B, k+1, pipeplan.CB, k, b)
				before(pipeplan.CB, k, pipeplan.B, k, b)
			} else {
				before(pipeplan.F, k, pipeplan.F, k+1, b)
				before(pipeplan.B, k+1, pipeplan.B, k, b)
			}
		}
		before(pipeplan.F, n-1, pipeplan.B, n-1, b)
	}
	type iv struct{ s, e float64 }
	res := map[string][]iv{}
	for b := range window {
		for _, o := range p.Pattern {
			key := "gpu" + string(rune('0'+p.Stages[o.Stage].GPU))
			if o.Op == pipeplan.CF || o.Op == pipeplan.CB {
				a, c := p.Stages[o.Stage].GPU, p.Stages[o.Stage+1].GPU
				key = "link" + string(rune('0'+min(a, c))) + string(rune('0'+max(a, c)))
			}
			s, e := at(o.Op, o.Stage, b)
			res[key] = append(res[key], iv{s, e})
		}
	}
	for _, ivs := range res {
		for i := range ivs {
			for j := i + 1; j < len(ivs); j++ {
				if ivs[i].s < ivs[j].e-eps && ivs[j].s < ivs[i].e-eps {
					overlaps++
				}
			}
		}
	}
	// Memory: mini-batch b holds stage k's stored bytes from its F start to its B end,
	// and an operation holds its transient bytes while it runs (its own mini-batch too
	// when it is a backward). Look at the operations of period m over every mini-batch
	// that can be in flight then.
	peaks = make([]int64, p.GPUs)
	m := 2*h + 8
	costs := make([]pipeline.StageCost, n)
	for k, s := range p.Stages {
		c, err := pr.Cost(s)
		if err != nil {
			panic(err)
		}
		costs[k] = c
	}
	for g := range p.GPUs {
		for k0, s0 := range p.Stages {
			if s0.GPU != g {
				continue
			}
			for _, kind := range []pipeplan.OpKind{pipeplan.F, pipeplan.B} {
				o := p.Pattern[p.Find(kind, k0)]
				b0 := m - o.Shift // the mini-batch whose operation starts in period m
				t, _ := at(kind, k0, b0)
				act := costs[k0].FwdExtra
				if kind == pipeplan.B {
					act = costs[k0].BwdExtra
				}
				for k, s := range p.Stages {
					if s.GPU != g {
						continue
					}
					// The mini-batches whose operations run in period m are m−hi..m−lo;
					// shifts need not be near 0 (a moved plan's may all be −21).
					for b := m - hi - 4*h - 16; b <= m-lo+4*h+16; b++ {
						fs, _ := at(pipeplan.F, k, b)
						_, be := at(pipeplan.B, k, b)
						own := kind == pipeplan.B && k == k0 && b == b0
						if fs <= t+eps && (be > t+eps || own) {
							act += costs[k].Stored
						}
					}
				}
				peaks[g] = max(peaks[g], act)
			}
		}
	}
	return deps, overlaps, peaks
}

// activationPeaks returns the validator's peak of stored activations of each device.
func activationPeaks(rep *pipeline.Report) []int64 {
	out := slices.Clone(rep.MemoryPeak)
	for g := range out {
		out[g] -= rep.Static[g]
	}
	return out
}
