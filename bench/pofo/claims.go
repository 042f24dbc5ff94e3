package main

import (
	"fmt"
	"math"
	"strings"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/offload"
)

// claim is the verdict on one claim of spec §6.5.
type claim struct {
	id, verdict, text string
}

// value returns the fractional makespan ratio of an algorithm at a point (+Inf: no plan).
func value(p point, algo string) float64 {
	if r := p.res[algo]; r.ok {
		return r.frac
	}
	return math.Inf(1)
}

// each calls f for every point of every study.
func each(studies []*study, f func(st *study, p point)) {
	for _, st := range studies {
		for _, p := range st.points {
			f(st, p)
		}
	}
}

func verdict(ok, partly bool) string {
	switch {
	case ok:
		return "holds"
	case partly:
		return "partly holds"
	}
	return "does not hold"
}

// claims checks C4-1 … C4-10 and the NeurIPS abstract's "one third" on the results.
func claims(studies []*study, times []solverTime) []claim {
	var out []claim
	add := func(id, v, format string, args ...any) { out = append(out, claim{id, v, fmt.Sprintf(format, args...)}) }
	const slow = 12e9

	// C4-1: offload-only beats remat at large memory (α ≈ 0.75) at 12 GB/s, is much worse
	// at small memory unless the link is faster.
	{
		highWins, high, lowWorse, low, lowFast, lowFastWorse := 0, 0, 0, 0, 0, 0
		each(studies, func(st *study, p point) {
			o, r := value(p, "offload"), value(p, "rotor")
			switch {
			case p.beta == slow && (p.alpha == 0.7 || p.alpha == 0.8):
				high++
				if o < r {
					highWins++
				}
			case p.beta == slow && p.alpha <= 0.3:
				low++
				if o > r*1.05 {
					lowWorse++
				}
			case p.beta == bandwidths[2] && p.alpha <= 0.3:
				lowFast++
				if o > r*1.05 {
					lowFastWorse++
				}
			}
		})
		add("C4-1", verdict(highWins == high && lowWorse == low, highWins > 0 && lowWorse > 0),
			"at 12 GB/s and α ∈ {0.7, 0.8} offload-only beats rotor in %d of %d cases; at α ≤ 0.3 it is more than 5 %% slower than rotor "+
				"(or finds no plan) in %d of %d cases at 12 GB/s and %d of %d at 36 GB/s.", highWins, high, lowWorse, low, lowFastWorse, lowFast)
	}
	// C4-2: OPPORTUNIST slightly better than remat, except some small-memory cases;
	// sometimes no solution at low memory.
	{
		better, total, fails := 0, 0, 0
		var gains []float64
		each(studies, func(st *study, p point) {
			o, r := value(p, "opportunist"), value(p, "rotor")
			total++
			if math.IsInf(o, 1) {
				fails++
				return
			}
			if o < r {
				better++
				gains = append(gains, 1-o/r)
			}
		})
		add("C4-2", verdict(better > total/2 && fails > 0, better > 0),
			"OPPORTUNIST is faster than rotor in %d of %d configurations (median gain %.1f %%) and finds no plan in %d; elsewhere it is slower than rotor.",
			better, total, 100*median(gains), fails)
	}
	// C4-3: AUTOCAPPER performs very well for α > 0.5.
	{
		near, total := 0, 0
		worst := 0.0
		each(studies, func(st *study, p point) {
			if p.alpha <= 0.5 {
				return
			}
			total++
			a, best := value(p, "autocapper"), math.Inf(1)
			for _, x := range algos {
				best = min(best, value(p, x))
			}
			worst = max(worst, a/best-1)
			if a <= best*1.03 {
				near++
			}
		})
		add("C4-3", verdict(near == total, near > total/2),
			"for α > 0.5 AUTOCAPPER is within 3 %% of the best algorithm in %d of %d configurations (worst %.1f %% behind).", near, total, 100*worst)
	}
	// C4-4: POFO consistently outperforms both remat-only and offload-only.
	{
		wins, total := 0, 0
		worst := 0.0
		var where []string
		each(studies, func(st *study, p point) {
			total++
			v, b := value(p, "pofo"), min(value(p, "rotor"), value(p, "offload"))
			if v <= b*(1+1e-9) {
				wins++
				return
			}
			worst = max(worst, v/b-1)
			where = append(where, fmt.Sprintf("%s α=%.1f β=%.0f", st.name, p.alpha, p.beta/1e9))
		})
		add("C4-4", verdict(wins == total, wins > total*3/4),
			"POFO is at least as fast as both rotor and offload-only in %d of %d configurations; elsewhere at most %.1f %% slower (%s). "+
				"POFO returns the fastest of its DP, rotor, AUTOCAPPER and OPPORTUNIST, so it is never slower than rotor; offload-only (DYNPROG, %d slots) is not among its candidates, "+
				"and its unsynchronized schedules may offload the loss input, which the DP never does, while the DP's grid is coarser (%s); "+
				"at the same discretization the DP is never slower than rotor, nor than a synchronized offload-only schedule that keeps the loss input (tests).",
			wins, total, 100*worst, firstFew(where), offload.DynProgSlots, defaultGrids(studies))
	}
	// C4-5: at high memory AUTOCAPPER ≈ POFO, sometimes marginally better; at lower
	// memory POFO is much better. The claim is about the DP: POFO itself returns
	// AUTOCAPPER's plan where that is faster.
	{
		close, high, capBetter, lowPofo, low := 0, 0, 0, 0, 0
		each(studies, func(st *study, p point) {
			a, v := value(p, "autocapper"), dpAlone(p)
			switch {
			case p.alpha >= 0.7:
				high++
				if math.Abs(a-v) <= 0.02*v {
					close++
				}
				if a < v {
					capBetter++
				}
			case p.alpha <= 0.3:
				low++
				if v < a*0.97 {
					lowPofo++
				}
			}
		})
		add("C4-5", verdict(close > high*3/4 && lowPofo > low/2, close > high/2 || lowPofo > low/2),
			"for α ≥ 0.7 AUTOCAPPER is within 2 %% of POFO's DP in %d of %d configurations and faster in %d; for α ≤ 0.3 the DP is more than 3 %% faster in %d of %d "+
				"(POFO returns AUTOCAPPER's plan where it is faster).",
			close, high, capBetter, lowPofo, low)
	}
	// C4-6: offload-only is perfect at high bandwidth.
	{
		perfect, total := 0, 0
		each(studies, func(st *study, p point) {
			if p.beta != bandwidths[2] || p.alpha < 0.5 {
				return
			}
			total++
			if value(p, "offload") <= 1.01 {
				perfect++
			}
		})
		add("C4-6", verdict(perfect == total, perfect > 0),
			"at 36 GB/s and α ≥ 0.5 offload-only is within 1 %% of the sequential time in %d of %d configurations.", perfect, total)
	}
	// C4-7: at 12 GB/s POFO offloads about the same amount at every memory limit;
	// AUTOCAPPER drops to zero near M^low.
	{
		var lines []string
		steady, capDrop := 0, 0
		for _, st := range studies {
			var vols []float64
			var capLow float64 = -1
			for _, p := range st.points {
				if p.beta != slow {
					continue
				}
				if r := p.res["pofo"]; r.ok {
					vols = append(vols, r.offloaded)
				}
				if p.alpha == alphas[0] {
					if r := p.res["autocapper"]; r.ok {
						capLow = r.offloaded
					}
				}
			}
			lo, hi := minMax(vols)
			if hi-lo <= 0.5*hi {
				steady++
			}
			if capLow >= 0 && capLow < 0.02 {
				capDrop++
			}
			lines = append(lines, fmt.Sprintf("%s: POFO %.2f–%.2f of Σā, AUTOCAPPER at α=0.1 %s", st.name, lo, hi, fmtVol(capLow)))
		}
		add("C4-7", verdict(steady == len(studies) && capDrop == len(studies), steady > 0 || capDrop > 0),
			"offloaded volume at 12 GB/s over α: %s.", strings.Join(lines, "; "))
	}
	// C4-8: offloaded volume grows almost linearly with β for POFO and OPPORTUNIST.
	{
		var lines []string
		linear := 0
		for _, st := range studies {
			for _, algo := range []string{"pofo", "opportunist"} {
				var v [3]float64
				for _, p := range st.points {
					if p.alpha != 0.2 {
						continue
					}
					for i, b := range bandwidths {
						if p.beta == b && p.res[algo].ok {
							v[i] = p.res[algo].offloaded
						}
					}
				}
				if v[0] > 0 && v[1] > 1.5*v[0] && v[2] > 2.2*v[0] && v[2] > v[1] {
					linear++
				}
				lines = append(lines, fmt.Sprintf("%s %s %.2f/%.2f/%.2f", st.name, algo, v[0], v[1], v[2]))
			}
		}
		add("C4-8", verdict(linear == 2*len(studies), linear > 0),
			"offloaded share of Σā at α = 0.2 for 12/24/36 GB/s: %s (linear growth would be 1 : 2 : 3).", strings.Join(lines, "; "))
	}
	// C4-9 and C4-10: activation memory divided by 4 to 6 at under 20 % overhead.
	{
		var lines []string
		ok := 0
		for _, st := range studies {
			ratio := float64(st.high) / float64(st.under20)
			if ratio >= 4 {
				ok++
			}
			lines = append(lines, fmt.Sprintf("%s ÷%.1f (%s)", st.name, ratio, chainplan.FormatBytes(st.under20)))
		}
		add("C4-9", verdict(ok == len(studies), ok > 0),
			"M^high divided by the smallest budget at which POFO's overhead stays under 20 %% at 12 GB/s (bisection to 1 %% of M^high, below M^low too, since offloading extends feasibility): %s.",
			strings.Join(lines, ", "))
		var worst float64
		for _, t := range times {
			worst = max(worst, t.wall.Seconds())
		}
		var perRun float64
		each(studies, func(st *study, p point) { perRun = max(perRun, p.res["pofo"].solve.Seconds()) })
		add("C4-10", verdict(ok == len(studies) && worst < 240, worst < 240),
			"memory as in C4-9; POFO's solve time is at most %.1f s on the example chains and %.1f s on 100 random stages (seconds to minutes).", perRun, worst)
	}
	// NeurIPS abstract: offloading removes about one third of rematerialization's overhead.
	{
		var shares []float64
		each(studies, func(st *study, p point) {
			r, v := value(p, "rotor"), value(p, "pofo")
			if p.beta == slow && r > 1.01 && !math.IsInf(v, 1) && !math.IsInf(r, 1) {
				shares = append(shares, (r-v)/(r-1))
			}
		})
		m := median(shares)
		add("One third (NeurIPS abstract, §6.8)", verdict(m >= 0.25, m > 0),
			"at 12 GB/s POFO removes a median %.0f %% of rotor's overhead (%d configurations where rotor is more than 1 %% over the sequential time).",
			100*m, len(shares))
	}
	return out
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s[len(s)/2]
}

func minMax(v []float64) (float64, float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range v {
		lo, hi = min(lo, x), max(hi, x)
	}
	if lo > hi {
		return 0, 0
	}
	return lo, hi
}

func fmtVol(v float64) string {
	if v < 0 {
		return "no plan"
	}
	return fmt.Sprintf("%.2f", v)
}

func firstFew(s []string) string {
	if len(s) > 4 {
		return strings.Join(s[:4], ", ") + fmt.Sprintf(", and %d more", len(s)-4)
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
