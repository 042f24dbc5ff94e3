package offload

import (
	"fmt"
	"math"
	"slices"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/offload/internal/units"
	remat "github.com/chainplan/chainplan/planner/simulate"
)

// SimOptions describes the platform a schedule is replayed on.
type SimOptions struct {
	// BandwidthBytesPerS is β in bytes per time unit of the chain. It must be positive
	// and finite when the schedule has transfers.
	BandwidthBytesPerS float64
	// LimitBytes is the memory limit M (activations, chain input included); a negative
	// value replays without a limit.
	LimitBytes int64
	// Model is the memory model; the zero value means Fractional.
	Model chainplan.MemoryModel
}

// Report is the outcome of a replay (spec §5.5): validity with the problems found, and
// for a valid schedule its makespan, peak memory, offloaded volume, compute idle time and
// timing.
type Report struct {
	Valid          bool                  `json:"valid"`
	Issues         []Issue               `json:"issues"`
	MemoryModel    chainplan.MemoryModel `json:"memory_model"`
	Makespan       float64               `json:"makespan"`
	PeakBytes      int64                 `json:"peak_bytes"`
	LimitBytes     int64                 `json:"limit_bytes"`
	OffloadedBytes int64                 `json:"offloaded_bytes"`
	IdleTime       float64               `json:"idle_time"`
	// FailOp is the compute operation that does not fit the limit even once every
	// transfer that could help has completed (−1: none). The heuristics use it.
	FailOp int               `json:"fail_op"`
	Timing *chainplan.Timing `json:"timing,omitempty"`
}

// Err returns nil for a valid replay and otherwise an error listing the first issues.
func (r *Report) Err() error {
	if r.Valid {
		return nil
	}
	return remat.IssuesError("schedule", r.Issues)
}

func (o SimOptions) params(s Schedule) (params, error) {
	p := params{beta: o.BandwidthBytesPerS, limit: float64(o.LimitBytes), model: o.Model}
	if p.model == "" {
		p.model = chainplan.Fractional
	}
	if !p.model.Valid() {
		return p, fmt.Errorf("%w: unknown memory model %q", chainplan.ErrUnsupported, o.Model)
	}
	if o.LimitBytes < 0 {
		p.limit = math.MaxFloat64 / 4
	}
	if b := p.beta; len(s.Transfers) > 0 && (math.IsNaN(b) || math.IsInf(b, 0) || b <= 0) {
		return p, fmt.Errorf("%w: the bandwidth must be a positive, finite number of bytes per time unit (got %v)",
			chainplan.ErrUnsupported, b)
	}
	if len(s.Transfers) == 0 && !(p.beta > 0) {
		p.beta = 1 // unused
	}
	return p, nil
}

// Simulate replays a schedule on c (exact bytes) and times it with the no-wait rule of
// spec §5.4 (Prop. 1): forward operations and offloads as early as possible, backward
// operations and prefetches as late as possible, each operation waiting until the
// transfers make room for it. A synchronized schedule (SyncAtLoss) joins the phases after
// the remaining offloads and then the prefetches that cannot overlap the backward (the
// ε_G of OR.3); otherwise the backward phase is shifted as a block to the smallest gap at
// which the checker accepts the whole timing. The timing is then validated by the checker
// of spec §5.5.
//
// Errors (bad chain or options) are returned; an invalid schedule is a Report with Valid
// false. The time complexity is O((n+m)·m) per check for n operations and m transfers,
// times about 60 checks for an unsynchronized schedule.
func Simulate(c *chainplan.Chain, s Schedule, opts SimOptions) (*Report, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	p, err := opts.params(s)
	if err != nil {
		return nil, err
	}
	return simulate(units.Exact(c), s, p), nil
}

// Replay is Simulate for the planners: on a chain already in exact bytes
// (units.Exact), with options they have checked. It panics on options Simulate would
// refuse.
func Replay(c *units.Chain, s Schedule, opts SimOptions) *Report {
	p, err := opts.params(s)
	if err != nil {
		panic(fmt.Sprintf("offload simulator: %v", err))
	}
	return simulate(c, s, p)
}

// simulate is Simulate on an exact chain.
func simulate(c *units.Chain, s Schedule, p params) *Report {
	lg := Analyze(c, s)
	r := newReport(lg, p)
	if len(lg.Issues) > 0 {
		r.Issues = append(r.Issues, lg.Issues...)
		return r
	}
	ph := lg.noWait(p)
	if ph.failOp >= 0 {
		k := ph.failOp
		r.FailOp = k
		r.Issues = append(r.Issues, Issue{Op: k, Transfer: -1, Msg: fmt.Sprintf(
			"%s needs %.0f bytes, over the limit of %.0f even once every transfer that frees memory for it has run",
			lg.Ops[k], lg.static[k]+lg.trans[k]-offloadedDuring(lg, k), p.limit)})
		return r
	}
	gSync := ph.rF + ph.rB
	t := lg.place(ph, gSync, p.beta)
	res := lg.check(t, p, s.SyncAtLoss)
	if !s.SyncAtLoss && len(res.issues) == 0 {
		// Feasibility only improves as the backward block moves later (offloads have
		// longer to finish, prefetches reserve later), so the smallest gap is found by
		// bisection between 0 and the synchronized gap.
		if t0 := lg.place(ph, 0, p.beta); len(lg.check(t0, p, false).issues) == 0 {
			t = t0
		} else {
			lo, hi := 0.0, gSync
			scale := ph.tF + ph.tB + gSync
			for i := 0; i < 200 && hi-lo > 1e-13*scale; i++ {
				mid := lo + (hi-lo)/2
				if len(lg.check(lg.place(ph, mid, p.beta), p, false).issues) == 0 {
					hi = mid
				} else {
					lo = mid
				}
			}
			// A gap within the checker's time tolerance of the synchronized one is that
			// one: the bisection would otherwise spend the tolerance and report the
			// synchronized timing a few parts in 10⁹ faster than it is.
			if gSync-hi <= timeTol(2*scale) {
				hi = gSync
			}
			t = lg.place(ph, hi, p.beta)
		}
		res = lg.check(t, p, false)
	}
	return finishReport(r, lg, t, res)
}

// offloadedDuring returns the size of the offloaded instances stored during op k that it
// does not read: the most the transfers can free for it.
func offloadedDuring(lg *Analysis, k int) float64 {
	var v float64
	for _, id := range lg.offDuring[k] {
		if !slices.Contains(lg.Inputs[k], id) {
			v += lg.Insts[id].Size
		}
	}
	return v
}

func newReport(lg *Analysis, p params) *Report {
	r := &Report{MemoryModel: p.model, LimitBytes: int64(p.limit), FailOp: -1, Issues: []Issue{}}
	if p.limit >= math.MaxFloat64/8 {
		r.LimitBytes = -1
	}
	for _, x := range lg.xfers {
		if x.dir == chainplan.TransferOffload {
			r.OffloadedBytes += int64(x.size)
		}
	}
	return r
}

// finishReport fills a report from a checked timing.
func finishReport(r *Report, lg *Analysis, t *times, res checkResult) *Report {
	r.Issues = append(r.Issues, res.issues...)
	r.Valid = len(r.Issues) == 0
	r.Makespan = res.makespan
	r.PeakBytes = int64(math.Ceil(res.peak - res.memTol))
	busy := 0.0
	for _, d := range lg.dur {
		busy += d
	}
	r.IdleTime = max(0, res.makespan-busy)
	r.Timing = &chainplan.Timing{ComputeStart: t.start, TransferStart: t.xs}
	return r
}

// Check validates a schedule with an explicit timing (spec §5.5) and reports its makespan
// and peak. It ignores any planner's claims: only the chain, the schedule, the timing and
// the options count.
func Check(c *chainplan.Chain, s Schedule, tm chainplan.Timing, opts SimOptions) (*Report, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	p, err := opts.params(s)
	if err != nil {
		return nil, err
	}
	lg := Analyze(units.Exact(c), s)
	r := newReport(lg, p)
	if len(lg.Issues) > 0 {
		r.Issues = append(r.Issues, lg.Issues...)
		return r, nil
	}
	if len(tm.ComputeStart) != len(s.Compute) || len(tm.TransferStart) != len(s.Transfers) {
		return nil, fmt.Errorf("%w: the timing has %d compute and %d transfer starts, the schedule %d operations and %d transfers",
			chainplan.ErrInvalidPlan, len(tm.ComputeStart), len(tm.TransferStart), len(s.Compute), len(s.Transfers))
	}
	t := newTimes(len(s.Compute), len(s.Transfers))
	copy(t.start, tm.ComputeStart)
	copy(t.xs, tm.TransferStart)
	return finishReport(r, lg, t, lg.check(t, p, s.SyncAtLoss)), nil
}
