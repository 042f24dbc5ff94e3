package offload

import (
	"fmt"
	"math"
	"slices"

	"github.com/chainplan/chainplan"
)

// side is the side of a breakpoint at which an integral step is read: the limit from the
// left or from the right.
type side int

const (
	left side = iota
	right
)

// maxIssues bounds the issues one check reports.
const maxIssues = 20

// checkResult is what the checker of spec §5.5 finds on a timed schedule.
type checkResult struct {
	issues   []Issue
	peak     float64
	makespan float64
	memTol   float64 // the tolerance of the memory comparisons
}

// check validates an explicitly timed schedule (spec §5.5): operations in order without
// overlap; transfers one at a time on the link in list order, each lasting size/β; an
// offload after its anchor, a prefetch after its offload and before its anchor; with sync,
// every offload before B_{L+1} and every prefetch after F_{L+1}; every input readable when
// its reader starts; memory within the limit at every instant. It reports the peak memory
// and the makespan. lg must be free of issues. t.end and t.xe are recomputed from the
// starts.
func (lg *Analysis) check(t *times, p params, sync bool) checkResult {
	var res checkResult
	add := func(op, tr int, format string, args ...any) {
		if len(res.issues) < maxIssues {
			res.issues = append(res.issues, Issue{Op: op, Transfer: tr, Msg: fmt.Sprintf(format, args...)})
		}
	}
	n := len(lg.Ops)
	frac := p.model == chainplan.Fractional
	total := 0.0
	for k := range lg.Ops {
		t.end[k] = t.start[k] + lg.dur[k]
		total += lg.dur[k]
	}
	for j, x := range lg.xfers {
		t.xe[j] = t.xs[j] + x.size/p.beta
	}
	tt := timeTol(total + t.end[n-1])
	for k := range lg.Ops {
		if k == 0 && t.start[0] < -tt || k > 0 && t.start[k] < t.end[k-1]-tt {
			add(k, -1, "starts at %.9g, before the previous operation ends", t.start[k])
		}
		res.makespan = max(res.makespan, t.end[k])
	}
	for j, x := range lg.xfers {
		res.makespan = max(res.makespan, t.xe[j])
		if j > 0 && t.xs[j] < t.xe[j-1]-tt {
			add(-1, j, "starts at %.9g while transfer %d still runs (one transfer at a time, O.1)", t.xs[j], j-1)
		}
		in := &lg.Insts[x.inst]
		if x.dir == chainplan.TransferOffload {
			if x.anchor >= 0 && t.xs[j] < t.end[x.anchor]-tt {
				add(-1, j, "offload of %s starts before op %d ends", in.Tensor, x.anchor)
			}
			if sync && lg.Loss+1 < n && t.xe[j] > t.start[lg.Loss+1]+tt {
				add(-1, j, "offload of %s ends after the backward of the loss starts (OR.3)", in.Tensor)
			}
			continue
		}
		if t.xs[j] < t.xe[in.Off]-tt {
			add(-1, j, "prefetch of %s starts before its offload ends", in.Tensor)
		}
		if t.xe[j] > t.start[x.anchor]+tt {
			add(x.anchor, j, "prefetch of %s ends after op %d starts", in.Tensor, x.anchor)
		}
		if sync && t.xs[j] < t.end[lg.Loss]-tt {
			add(-1, j, "prefetch of %s starts before the forward of the loss ends (OR.3)", in.Tensor)
		}
	}
	for k := range lg.Ops {
		for _, id := range lg.Inputs[k] {
			in := &lg.Insts[id]
			if in.Off < 0 || in.Pre >= 0 && t.xe[in.Pre] <= t.start[k]+tt {
				continue
			}
			// Integral: the GPU copy is gone once the offload ends. Fractional: memory
			// leaves as the offload runs, so a reader must start before it does.
			gone := t.xe[in.Off]
			if frac {
				gone = t.xs[in.Off]
			}
			if t.start[k] > gone+tt {
				add(k, in.Off, "reads %s at %.9g, after its offload (%.9g-%.9g) without a prefetch",
					in.Tensor, t.start[k], t.xs[in.Off], t.xe[in.Off])
			}
		}
	}
	tolp := p
	if p.limit >= math.MaxFloat64/8 {
		// No limit: a part in 10⁹ of all the schedule could ever hold, not of the
		// stand-in for infinity (whose part in 10⁹ swallowed every peak).
		tolp.limit = lg.totalBytes()
	}
	res.memTol = tolp.memTol(res.makespan)
	res.peak = lg.memoryPeak(t, p, res.memTol, nil, func(op int, v float64) {
		add(op, -1, "needs %.10g bytes at some instant, over the limit of %.0f", v, p.limit)
	})
	return res
}

// memoryPeak evaluates mem(τ) of spec §5.3 at every breakpoint, with both one-sided limits,
// over each operation's window [start, end] (stored data, the transfers' credit and the
// operation's transient) and each idle gap before an operation (stored data and credit).
// over is called for each window that exceeds the limit by more than memTol; sample, when
// not nil, with every value evaluated, in time order (Trace).
func (lg *Analysis) memoryPeak(t *times, p params, memTol float64, sample func(τ, v float64),
	over func(op int, v float64)) float64 {
	frac := p.model == chainplan.Fractional
	tt := timeTol(t.end[len(t.end)-1])
	// The credit of an offloaded instance at τ: memory released minus memory reserved again.
	rel := make([]float64, len(lg.xfers)) // integral release time of each offload
	var bps []float64
	for j, x := range lg.xfers {
		bps = append(bps, t.xs[j], t.xe[j])
		if x.dir == chainplan.TransferOffload && !frac {
			rel[j] = lg.releaseTime(t, j, len(lg.Ops))
			bps = append(bps, rel[j])
		}
	}
	slices.Sort(bps)
	creditAt := func(id int, τ float64, relSide, fetchSide side) float64 {
		in := &lg.Insts[id]
		o := in.Off
		var released, fetched float64
		if frac {
			released = credit{t.xs[o], t.xe[o], in.Size}.at(τ, true)
			if in.Pre >= 0 {
				fetched = credit{t.xs[in.Pre], t.xe[in.Pre], in.Size}.at(τ, true)
			}
			return released - fetched
		}
		if τ > rel[o]+tt || relSide == right && τ >= rel[o]-tt {
			released = in.Size
		}
		if in.Pre >= 0 {
			s := t.xs[in.Pre]
			if τ > s+tt || fetchSide == right && τ >= s-tt {
				fetched = in.Size
			}
		}
		return released - fetched
	}
	memAt := func(k int, base, τ float64, relSide, fetchSide side) float64 {
		v := base
		for _, id := range lg.offDuring[k] {
			v -= creditAt(id, τ, relSide, fetchSide)
		}
		return v
	}
	peak := 0.0
	if len(lg.Insts) > 0 {
		peak = lg.Insts[0].Size
	}
	lim := p.limit + memTol
	window := func(k int, base, from, to float64, isOp bool) {
		worst := 0.0
		eval := func(τ float64, relSide, fetchSide side) {
			v := memAt(k, base, τ, relSide, fetchSide)
			worst = max(worst, v)
			if sample != nil {
				sample(τ, v)
			}
		}
		switch {
		case to-from <= tt && isOp:
			// An instantaneous operation sees the releases up to its instant but not a
			// reservation starting at it.
			eval(from, right, left)
		case to-from <= tt:
			return
		default:
			eval(from, right, right)
			lo, _ := slices.BinarySearch(bps, from+tt)
			for i := lo; i < len(bps) && bps[i] < to-tt; i++ {
				eval(bps[i], left, left)
				eval(bps[i], right, right)
			}
			eval(to, left, left)
		}
		peak = max(peak, worst)
		if worst > lim {
			over(k, worst)
		}
	}
	for k := range lg.Ops {
		gapFrom := 0.0
		if k > 0 {
			gapFrom = t.end[k-1]
		}
		window(k, lg.static[k], gapFrom, t.start[k], false)
		window(k, lg.static[k]+lg.trans[k], t.start[k], t.end[k], true)
	}
	return peak
}

// totalBytes is the sum of every tensor instance's size: a bound on any peak.
func (lg *Analysis) totalBytes() float64 {
	total := 0.0
	for _, in := range lg.Insts {
		total += in.Size
	}
	return total
}
