package pipesim

import (
	"fmt"
	"math"
)

// The period of a simulation is measured, not derived (docs/pipesim.md). A run of K
// mini-batches holds the pipeline's fill, its steady state and its drain; the period is
// the steady state's time per mini-batch, which this file finds and, when it cannot, says
// why the figure it gives depends on K.

// periodTol is the relative difference under which two spacings are the same: the times
// are sums of the same durations, equal up to rounding in a steady state.
const periodTol = 1e-6

// periodEstimate is the period of a run and where it was measured.
type periodEstimate struct {
	period float64
	// from and to are the mini-batches (1-based) whose spacing the period is; cycle the
	// mini-batches after which the steady state repeats (0 when none was seen).
	from, to, cycle int
	// starts and ends are the mean spacing of the mini-batches' starts and of their ends
	// at the first stage over from..to.
	starts, ends float64
	steady       bool
	// pileUp: the starts come faster than the ends, so the mini-batches in flight grow
	// with K (TiMePReSt without a cap in front of a slower stage).
	pileUp bool
}

// measurePeriod measures the period of mini-batches mb (K ≥ 2) over the second half of
// the run. A steady state is a pattern of starts that repeats every c mini-batches (seen
// at least twice in the second half) with the ends no slower than the starts; its period
// is the mean spacing over the largest whole number of repetitions, which then does not
// depend on K. Without one, the period is the larger of the mean spacings of the starts
// and of the ends over the second half (the larger discards the drain, where ends come
// faster, and a pile-up, where starts do), a figure that changes with K. flushes says that
// every mini-batch is a step that starts from an empty pipeline: the spacing of two
// mini-batches is then the steady state. unbounded says that nothing bounds the
// mini-batches in flight (TiMePReSt without a cap): starts faster than ends are then a
// pile-up that grows with K, not a fill that has not ended.
func measurePeriod(mb []MinibatchStats, flushes, unbounded bool) periodEstimate {
	k := len(mb)
	h := (k - 1) / 2 // 0-based: mini-batch h+1 opens the second half
	e := spacing(mb, h, k-1)
	e.pileUp = unbounded && e.starts < e.ends*(1-periodTol)
	if e.pileUp {
		return e
	}
	if flushes {
		e.steady, e.cycle = true, 1
		return e
	}
	n := k - 1 - h // spacings in the second half
	for c := 1; 2*c <= n; c++ {
		if !repeats(mb, h, c) {
			continue
		}
		m := n / c
		s := spacing(mb, k-1-m*c, k-1)
		if s.starts < s.ends*(1-periodTol) {
			break
		}
		s.steady, s.cycle = true, c
		return s
	}
	return e
}

// spacing is the period over mini-batches a..b (0-based, a < b): the larger of the mean
// spacings of their starts and of their ends.
func spacing(mb []MinibatchStats, a, b int) periodEstimate {
	n := float64(b - a)
	st, en := (mb[b].Start-mb[a].Start)/n, (mb[b].End-mb[a].End)/n
	return periodEstimate{period: max(st, en), from: a + 1, to: b + 1, starts: st, ends: en}
}

// repeats reports whether the spacings of the starts of mini-batches h.. repeat every c.
func repeats(mb []MinibatchStats, h, c int) bool {
	for i := h; i+c+1 < len(mb); i++ {
		a, b := mb[i+1].Start-mb[i].Start, mb[i+c+1].Start-mb[i+c].Start
		if math.Abs(a-b) > periodTol*max(math.Abs(a), math.Abs(b)) {
			return false
		}
	}
	return true
}

// periodWarnings are the sentences that say why a run's period is not a steady state's,
// and what gives one; times are written by t.
func periodWarnings(e periodEstimate, k int, t func(float64) string) []string {
	switch {
	case k < 2:
		return []string{"one mini-batch: the period is the makespan (fill and drain included), not a steady state; " +
			"simulate more mini-batches to measure one"}
	case e.pileUp:
		return []string{fmt.Sprintf("no steady state: the first stage starts a mini-batch every %s but one leaves every %s, "+
			"so mini-batches pile up in front of a slower stage (in flight grows with the mini-batches simulated); the period "+
			"given is the rate at which they leave over mini-batches %d..%d, and changes with the number of mini-batches "+
			"simulated; a cap on the mini-batches in flight (max_inflight) gives a steady state",
			t(e.starts), t(e.ends), e.from, e.to)}
	case !e.steady:
		return []string{fmt.Sprintf("no steady state seen within %d mini-batches (one shows as a pattern of starts that "+
			"repeats at least twice in the second half of the run): the period is the mean spacing over mini-batches "+
			"%d..%d, which may still include the pipeline's fill and then changes with the number of mini-batches "+
			"simulated; simulate at least %d to measure the steady state", k, e.from, e.to, max(8, 2*k))}
	}
	return nil
}

// timeText writes a time of the run with its unit: seconds, or time points in unit time.
func (s *sim) timeText(v float64) string {
	if s.o.UnitTime {
		return fmt.Sprintf("%.4g time points", v)
	}
	return fmt.Sprintf("%.4g s", v)
}
