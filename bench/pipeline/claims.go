package main

import (
	"fmt"
	"math"
	"slices"

	"github.com/chainplan/chainplan/bench/internal/stats"
)

// tol is the relative difference below which two periods count as equal.
const tol = 1e-3

// pairs collects period(pipedream)/period(madpipe) over the points where both have a plan,
// with filter deciding which points count; pdOnlyMissing counts the points where madpipe
// has a plan and pipedream none.
func pairs(all []*series, filter func(s *series, pt point) bool) (ratios []float64, pdMissing int) {
	for _, s := range all {
		for _, pt := range s.points {
			if !filter(s, pt) {
				continue
			}
			m, d := pt.res["madpipe"], pt.res["pipedream"]
			switch {
			case m.ok && d.ok:
				ratios = append(ratios, d.period/m.period)
			case m.ok:
				pdMissing++
			}
		}
	}
	return ratios, pdMissing
}

func constrained(s *series, pt point) bool { return s.binds(pt) }

// writeClaims checks the claims R1-R10 of madpipe spec §6.2 and reports each with its
// evidence.
func writeClaims(p func(string, ...any), all []*series) {
	p("## Claims of the paper (madpipe spec §6.2)\n\n")
	ratios, missing := pairs(all, constrained)
	g := stats.GeoMean(ratios)
	p("**Geometric mean of period(pipedream)/period(madpipe) over the memory-constrained points where both have a plan: ")
	p("%.3f** (%d points; the issue's target is ≥ 1.3). At %d more constrained points madpipe has a plan and pipedream none. ", g, len(ratios), missing)
	allRatios, _ := pairs(all, func(*series, point) bool { return true })
	p("Over every point where both have a plan: %.3f (%d points). ", stats.GeoMean(allRatios), len(allRatios))
	own, total := 0, 0
	for _, s := range all {
		for _, pt := range s.points {
			if r := pt.res["madpipe"]; r.ok {
				total++
				if r.note == "madpipe" {
					own++
				}
			}
		}
	}
	p("madpipe returned its own (phase 2) plan at %d of the %d points where it has one, the contiguous plan elsewhere.\n\n", own, total)
	p("| claim | verdict | evidence |\n|---|---|---|\n")
	for _, c := range []struct {
		id    string
		check func([]*series) (bool, string)
	}{
		{"R1 madpipe better in most cases, especially with constrained memory and P > 2", claimR1},
		{"R2 pipedream's period routinely 20 % larger", claimR2},
		{"R3 pipedream up to 2× or 3× slower", claimR3},
		{"R4 pipedream's DP optimistic, its partition much slower once scheduled; madpipe's prediction higher, its schedule better", claimR4},
		{"R5 predicted periods non-increasing in M", claimR5},
		{"R6 actual periods not monotone in M, more so for pipedream", claimR6},
		{"R7 geometric mean over P and β of the overhead above 20 % when M < 10 GB", claimR7},
		{"R8 speedup grows with P at ample memory, more for madpipe; degrades when memory is tight", claimR8},
		{"R9 24 GB/s improves little over 12 GB/s", claimR9},
		{"R10 madpipe twice the throughput of pipedream (aggregate)", claimR10},
	} {
		ok, ev := c.check(all)
		verdict := "does not hold"
		if ok {
			verdict = "holds"
		}
		p("| %s | %s | %s |\n", c.id, verdict, ev)
	}
	p("\n")
}

func claimR1(all []*series) (bool, string) {
	count := func(filter func(s *series, pt point) bool) (better, total int) {
		for _, s := range all {
			for _, pt := range s.points {
				m, d := pt.res["madpipe"], pt.res["pipedream"]
				if !filter(s, pt) || !m.ok {
					continue
				}
				total++
				if !d.ok || m.period < d.period*(1-tol) {
					better++
				}
			}
		}
		return better, total
	}
	cb, ct := count(func(s *series, pt point) bool { return s.binds(pt) && s.gpus > 2 })
	ob, ot := count(func(s *series, pt point) bool { return !(s.binds(pt) && s.gpus > 2) })
	frac := func(a, b int) float64 {
		if b == 0 {
			return 0
		}
		return float64(a) / float64(b)
	}
	ev := fmt.Sprintf("madpipe strictly better (or pipedream without a plan) at %d of %d constrained points with P > 2 (%.0f %%), %d of %d elsewhere (%.0f %%)",
		cb, ct, 100*frac(cb, ct), ob, ot, 100*frac(ob, ot))
	return frac(cb, ct) > 0.5 && frac(cb, ct) >= frac(ob, ot), ev
}

func claimR2(all []*series) (bool, string) {
	r, _ := pairs(all, constrained)
	if len(r) == 0 {
		return false, "no constrained point where both have a plan"
	}
	s := slices.Clone(r)
	slices.Sort(s)
	over := 0
	for _, x := range s {
		if x >= 1.2 {
			over++
		}
	}
	med := s[len(s)/2]
	return med >= 1.2, fmt.Sprintf("median ratio %.2f at the constrained points; ≥ 1.2 at %d of %d", med, over, len(s))
}

func claimR3(all []*series) (bool, string) {
	best, where := 0.0, ""
	twice := 0
	for _, s := range all {
		for _, pt := range s.points {
			m, d := pt.res["madpipe"], pt.res["pipedream"]
			if !m.ok || !d.ok {
				continue
			}
			if r := d.period / m.period; r > best {
				best, where = r, fmt.Sprintf("%s P=%d β=%.0f M=%s", s.model, s.gpus, s.beta/1e9, fmtBytes(pt.memory))
			}
			if d.period >= 2*m.period {
				twice++
			}
		}
	}
	return best >= 2, fmt.Sprintf("largest ratio %.2f (%s); ≥ 2 at %d points", best, where, twice)
}

func claimR4(all []*series) (bool, string) {
	optimistic, pdTotal, cross, crossTotal := 0, 0, 0, 0
	for _, s := range all {
		for _, pt := range s.points {
			if !s.binds(pt) {
				continue
			}
			m, d := pt.res["madpipe"], pt.res["pipedream"]
			if d.ok && d.predicted > 0 {
				pdTotal++
				if d.predicted < d.period*(1-tol) {
					optimistic++
				}
			}
			if m.ok && d.ok && m.predicted > 0 && d.predicted > 0 {
				crossTotal++
				if m.predicted > d.predicted*(1+tol) && m.period < d.period*(1-tol) {
					cross++
				}
			}
		}
	}
	if pdTotal == 0 {
		return false, "the plans report no predicted period"
	}
	ev := fmt.Sprintf("pipedream's prediction below its scheduled period at %d of %d constrained points; madpipe predicted higher but scheduled better at %d of %d",
		optimistic, pdTotal, cross, crossTotal)
	return 2*optimistic > pdTotal && cross > 0, ev
}

// monotone counts the series whose values (taken from pt by get, NaN when absent) rise
// with M by more than tol somewhere.
func monotone(all []*series, get func(point) float64) (rising, total int) {
	for _, s := range all {
		last := math.NaN()
		rose, any := false, false
		for _, pt := range s.points {
			v := get(pt)
			if math.IsNaN(v) {
				continue
			}
			any = true
			if !math.IsNaN(last) && v > last*(1+tol) {
				rose = true
			}
			last = v
		}
		if any {
			total++
			if rose {
				rising++
			}
		}
	}
	return rising, total
}

func field(algo string, predicted bool) func(point) float64 {
	return func(pt point) float64 {
		r := pt.res[algo]
		switch {
		case !r.ok:
			return math.NaN()
		case predicted && r.predicted > 0:
			return r.predicted
		case predicted:
			return math.NaN()
		}
		return r.period
	}
}

func claimR5(all []*series) (bool, string) {
	mr, mt := monotone(all, field("madpipe", true))
	dr, dt := monotone(all, field("pipedream", true))
	ev := fmt.Sprintf("predicted period rises with M in %d of %d madpipe series and %d of %d pipedream series", mr, mt, dr, dt)
	if mr > 0 {
		ev += fmt.Sprintf(" (madpipe by at most %.1f %%: phase 1's memory grid has 11 values over [0, M], so its step grows with M)",
			100*largestRise(all, field("madpipe", true)))
	}
	return mr == 0 && dr == 0 && mt+dt > 0, ev
}

// largestRise returns the largest relative rise from one memory level to the next.
func largestRise(all []*series, get func(point) float64) float64 {
	best := 0.0
	for _, s := range all {
		last := math.NaN()
		for _, pt := range s.points {
			v := get(pt)
			if math.IsNaN(v) {
				continue
			}
			if !math.IsNaN(last) {
				best = max(best, v/last-1)
			}
			last = v
		}
	}
	return best
}

func claimR6(all []*series) (bool, string) {
	mr, mt := monotone(all, field("madpipe", false))
	dr, dt := monotone(all, field("pipedream", false))
	cr, ct := monotone(all, field("contiguous", false))
	ev := fmt.Sprintf("the period rises with M somewhere in %d of %d pipedream series, %d of %d madpipe series, %d of %d contiguous series (exact: never)", dr, dt, mr, mt, cr, ct)
	return dr > 0 && dr >= mr, ev
}

func claimR7(all []*series) (bool, string) {
	// The paper's memories are absolute (3 to 16 GB); ours follow each series' range.
	// Group by model and memory level, average over P and β, and look at the levels
	// whose memory stays under 10 GB.
	type key struct {
		model string
		level int
	}
	ratios := map[key][]float64{}
	for _, s := range all {
		for k, pt := range s.points {
			m, d := pt.res["madpipe"], pt.res["pipedream"]
			if pt.memory < 10e9 && s.binds(pt) && m.ok && d.ok {
				ratios[key{s.model, k}] = append(ratios[key{s.model, k}], d.period/m.period)
			}
		}
	}
	over, total, low := 0, 0, math.Inf(1)
	for _, r := range ratios {
		g := stats.GeoMean(r)
		total++
		low = min(low, g)
		if g > 1.2 {
			over++
		}
	}
	if total == 0 {
		return false, "no constrained level under 10 GB where both have a plan"
	}
	return over == total, fmt.Sprintf("geometric mean over P and β above 1.2 at %d of %d (model, memory level) groups under 10 GB; lowest %.2f", over, total, low)
}

func claimR8(all []*series) (bool, string) {
	grows, total, madBetter, pairsN, tight, tightN := 0, 0, 0, 0, 0, 0
	byModel := map[string]map[int]*series{}
	for _, s := range all {
		if s.beta != bandwidths[0] {
			continue
		}
		if byModel[s.model] == nil {
			byModel[s.model] = map[int]*series{}
		}
		byModel[s.model][s.gpus] = s
		m, d := s.free["madpipe"], s.free["pipedream"]
		if m.ok && d.ok {
			pairsN++
			if m.period <= d.period*(1+tol) {
				madBetter++
			}
		}
		if len(s.points) > 0 && m.ok {
			if first := s.points[0].res["madpipe"]; first.ok {
				tightN++
				if first.period > m.period*(1+tol) {
					tight++
				}
			}
		}
	}
	for _, name := range sortedKeys(byModel) {
		ps := byModel[name]
		var gs []int
		for g := range ps {
			gs = append(gs, g)
		}
		slices.Sort(gs)
		for i := 1; i < len(gs); i++ {
			a, b := ps[gs[i-1]].free["madpipe"], ps[gs[i]].free["madpipe"]
			if a.ok && b.ok {
				total++
				if b.period < a.period*(1-tol) {
					grows++
				}
			}
		}
	}
	ev := fmt.Sprintf("at 12 GB/s with ample memory madpipe's speedup grows from one P to the next in %d of %d steps; madpipe ≥ pipedream in %d of %d series; the smallest memory slows madpipe in %d of %d series",
		grows, total, madBetter, pairsN, tight, tightN)
	return 2*grows > total && madBetter == pairsN && 2*tight > tightN, ev
}

func claimR9(all []*series) (bool, string) {
	var gains []float64
	idx := map[string]*series{}
	for _, s := range all {
		idx[fmt.Sprintf("%s/%d/%.0f", s.model, s.gpus, s.beta)] = s
	}
	for _, s := range all {
		if s.beta != bandwidths[0] {
			continue
		}
		f := idx[fmt.Sprintf("%s/%d/%.0f", s.model, s.gpus, bandwidths[1])]
		if f == nil {
			continue
		}
		a, b := s.free["madpipe"], f.free["madpipe"]
		if a.ok && b.ok {
			gains = append(gains, a.period/b.period-1)
		}
	}
	if len(gains) == 0 {
		return false, "no series where madpipe has a plan at both bandwidths"
	}
	slices.Sort(gains)
	med := gains[len(gains)/2]
	return med < 0.1, fmt.Sprintf("with ample memory, 24 GB/s shortens madpipe's period by %.1f %% (median over %d series; largest %.1f %%)",
		100*med, len(gains), 100*gains[len(gains)-1])
}

func claimR10(all []*series) (bool, string) {
	r, missing := pairs(all, constrained)
	g := stats.GeoMean(r)
	return g >= 2, fmt.Sprintf("geometric mean %.2f over %d constrained points (and %d where only madpipe has a plan)", g, len(r), missing)
}
