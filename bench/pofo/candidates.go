package main

import (
	"fmt"
	"math"
	"strings"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/offload"
)

// fallbacks are the candidates of offload.SolvePOFO besides its DP, as the benchmark names them.
var fallbacks = []string{"rotor", "autocapper", "opportunist"}

// candidate returns the fractional makespan ratio of one of POFO's candidates at a point
// (+Inf: not computed or no plan).
func candidate(p point, name string) float64 {
	if v, ok := p.res["pofo"].cands[name]; ok {
		return v
	}
	return math.Inf(1)
}

// dpAlone returns the ratio of POFO's DP at a point: the better of its two roundings.
func dpAlone(p point) float64 {
	return min(candidate(p, offload.CandidatePOFO), candidate(p, offload.CandidatePOFONearest))
}

// isDP reports whether a candidate name is one of the DP's.
func isDP(name string) bool {
	return name == offload.CandidatePOFO || name == offload.CandidatePOFONearest
}

// choiceCell is the table cell naming the candidate POFO returned, with the DP's own
// ratio when another one won.
func choiceCell(p point) string {
	r := p.res["pofo"]
	switch {
	case !r.ok:
		return "—"
	case isDP(r.chosen):
		return r.chosen
	case math.IsInf(dpAlone(p), 1):
		return r.chosen + " (DP: no plan)"
	}
	return fmt.Sprintf("%s (DP %.3f)", r.chosen, dpAlone(p))
}

// segmentInputsOnly reports whether every tensor a schedule offloads is the input of a
// forward-phase segment (read first by an F_all or F_ck before the loss), the only tensors
// POFO's DP offloads.
func segmentInputsOnly(seq []chainplan.Op, ts []chainplan.Transfer, loss int) bool {
	for _, t := range ts {
		if t.Dir != chainplan.TransferOffload {
			continue
		}
		k := t.Anchor + 1 // the chain's next operation reads what the anchor produced
		if k >= len(seq) || seq[k].Stage != t.Tensor.Stage+1 || seq[k].Stage == loss ||
			seq[k].Kind != chainplan.FAll && seq[k].Kind != chainplan.FCk {
			return false
		}
	}
	return true
}

// beats counts the points where fallback a is faster than the DP value dp(p) by more
// than a part in 10⁹, split by whether a's schedule, synchronized at the loss like the
// DP's, is still faster (a grid loss) or not (a loss to the synchronization).
func beats(studies []*study, a string, dp func(point) float64) (total, grid int) {
	each(studies, func(st *study, p point) {
		v, x := dp(p), value(p, a)
		if math.IsInf(x, 1) || x >= v*(1-1e-9) {
			return
		}
		total++
		if a == "autocapper" && p.res[a].sync < v*(1-1e-9) {
			grid++
		}
	})
	return total, grid
}

// candidateSection writes the part of the report on POFO's candidates: which one it
// returned, and why its DP alone lost.
func candidateSection(studies []*study) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	counts := map[string]int{}
	total, dpWins, upWins, segOnly, acPlans := 0, 0, 0, 0, 0
	each(studies, func(st *study, pt point) {
		r := pt.res["pofo"]
		if !r.ok {
			return
		}
		total++
		counts[r.chosen]++
		fb := math.Inf(1)
		for _, a := range fallbacks {
			fb = min(fb, value(pt, a))
		}
		if dpAlone(pt) <= fb*(1+1e-9) {
			dpWins++
		}
		if candidate(pt, offload.CandidatePOFO) <= fb*(1+1e-9) {
			upWins++
		}
	})
	for _, st := range studies {
		for _, pt := range st.points {
			if r := pt.res["autocapper"]; r.ok && r.seq != nil {
				acPlans++
				if segmentInputsOnly(r.seq, r.transfers, st.chain.Len()+1) {
					segOnly++
				}
			}
		}
	}
	p("## POFO's candidates\n\n")
	p("`offload.SolvePOFO` returns the fastest of its DP with new backlogs rounded up (`pofo`, spec §4.9) and rounded to the nearest unit ")
	p("(`pofo-nearest`), each timed with and without the synchronization at the loss, rotor, AUTOCAPPER and OPPORTUNIST, all replayed ")
	p("in the fractional model; the plan's `chosen` names it (docs/pofo.md). The column \"POFO chose\" above gives it, with the DP's own ")
	p("ratio when a fallback won.\n\n")
	var parts []string
	for _, name := range []string{offload.CandidatePOFO, offload.CandidatePOFONearest, offload.CandidateRotor, offload.CandidateAutoCapper, offload.CandidateOpportunist} {
		parts = append(parts, fmt.Sprintf("`%s` %d", name, counts[name]))
	}
	p("* Chosen, over %d configurations: %s. The DP (either rounding) is at least as fast as every fallback in %d.\n", total, strings.Join(parts, ", "), dpWins)
	acUp, gridUp := beats(studies, "autocapper", func(pt point) float64 { return candidate(pt, offload.CandidatePOFO) })
	acDP, gridDP := beats(studies, "autocapper", dpAlone)
	opUp, _ := beats(studies, "opportunist", func(pt point) float64 { return candidate(pt, offload.CandidatePOFO) })
	roUp, _ := beats(studies, "rotor", func(pt point) float64 { return candidate(pt, offload.CandidatePOFO) })
	p("* The DP with its backlogs rounded up, the only one before the candidates, is at least as fast as every fallback in %d; ", upWins)
	p("AUTOCAPPER beats it in %d, OPPORTUNIST in %d, rotor in %d. ", acUp, opUp, roUp)
	p("Of AUTOCAPPER's wins, %d remain when its schedule is timed synchronized at the loss like the DP's: ", gridUp)
	p("%d of its %d schedules offload segment inputs only, so these are schedules of the DP's own space that its grid made it miss; ", segOnly, acPlans)
	p("in the other %d AUTOCAPPER wins only because its offloads run on into the backward phase, which OR.3 excludes.\n", acUp-gridUp)
	p("* With both roundings the DP still loses to AUTOCAPPER in %d configurations (%d by the grid, %d by the synchronization).\n\n", acDP, gridDP, acDP-gridDP)
	return b.String()
}
