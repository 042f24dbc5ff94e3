package offload

import (
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/offload/internal/units"
	"github.com/chainplan/chainplan/planner/rotor"
)

// The POFO DP is optimal only within its model and up to its grid: it synchronizes the
// link at the loss (OR.3), offloads segment inputs only, and rounds its backlogs up to whole
// units, which on a slow link costs a unit of transfer time per rounding while a backlog
// lasts. Schedules outside that space (AUTOCAPPER's, whose offloads run on into the
// backward phase) or lost to the grid can be faster. SolvePOFO therefore computes the
// candidates below at the same budget and bandwidth, replays each with the simulator in the
// plan's memory model, and returns the fastest (docs/pofo.md, "Candidates").

// Names of SolvePOFO's candidates (Plan.Chosen), in the order that breaks ties: the DP's own
// plans first.
const (
	// CandidatePOFO is the POFO DP with every new backlog rounded up (spec §4.9).
	CandidatePOFO = "pofo"
	// CandidatePOFONearest is the same DP with every new backlog rounded to the nearest
	// unit: not conservative, but a long backlog no longer gains a unit per step.
	CandidatePOFONearest = "pofo-nearest"
	// CandidateRotor is the rematerialization-only plan (rotor), without transfers.
	CandidateRotor = "rotor"
	// CandidateAutoCapper is SolveAutoCapper's schedule.
	CandidateAutoCapper = "autocapper"
	// CandidateOpportunist is SolveOpportunist's schedule.
	CandidateOpportunist = "opportunist"
)

// tieTol is the relative margin by which a candidate must beat the best so far to replace
// it: the same schedule found twice differs by the rounding of sums only, and ties go to the
// earlier candidate.
const tieTol = 1e-12

// candidate is one schedule SolvePOFO compares, with its replay in the plan's memory model
// (rep nil: the candidate found no schedule).
type candidate struct {
	name string
	s    Schedule
	rep  *Report
	ms   float64
}

// solveCandidates computes the candidates at the budget, in the order of the constants
// above. When the first DP plan already runs in Σ(u_F+u_B), a lower bound, it is the only
// one. Otherwise the second DP runs (one table at a time: a table may take hundreds of
// megabytes) beside the heuristics, which are independent of it.
func solveCandidates(c *chainplan.Chain, exact *units.Chain, budget, slots int64, opts Options) []candidate {
	p := SimOptions{BandwidthBytesPerS: opts.BandwidthBytesPerS, LimitBytes: budget, Model: opts.MemoryModel()}
	out := []candidate{dpCandidate(CandidatePOFO, c, exact, budget, slots, p, false)}
	if r := out[0].rep; r != nil && r.Valid && r.Makespan <= exact.SumTime()*(1+tieTol) {
		return out
	}
	var others []candidate
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		others = heuristicCandidates(c, exact, budget, opts, p)
	}()
	out = append(out, dpCandidate(CandidatePOFONearest, c, exact, budget, slots, p, true))
	wg.Wait()
	return append(out, others...)
}

// dpCandidate runs the POFO DP, with new backlogs rounded up or to the nearest unit, and
// replays its schedule (bestTiming).
func dpCandidate(name string, c *chainplan.Chain, exact *units.Chain, budget, slots int64, p SimOptions, nearest bool) candidate {
	start := time.Now()
	cd := candidate{name: name}
	tb := pofoTable(c, budget, slots, p.BandwidthBytesPerS, false)
	tb.NearestDelta = nearest
	tb.fill()
	if !math.IsInf(tb.solveValue(), 1) {
		cd.s, cd.rep = bestTiming(exact, tb.schedule(exact), p)
	}
	cd.ms = msSince(start)
	return cd
}

// bestTiming replays a synchronized schedule both under OR.3, the DP's model, and
// unsynchronized: the same operations and transfers with the backward phase joined at the
// smallest gap the checker accepts, never later than the synchronized one (Simulate). The
// unsynchronized timing is kept only when it is faster.
func bestTiming(exact *units.Chain, s Schedule, p SimOptions) (Schedule, *Report) {
	r := Replay(exact, s, p)
	if !r.Valid || !s.SyncAtLoss {
		return s, r
	}
	u := s
	u.SyncAtLoss = false
	if ru := Replay(exact, u, p); ru.Valid && ru.Makespan < r.Makespan*(1-tieTol) {
		return u, ru
	}
	return s, r
}

// heuristicCandidates returns rotor's, AUTOCAPPER's and OPPORTUNIST's schedules at the
// budget, each replayed; below the memory that some operation needs whatever the schedule,
// none is tried.
func heuristicCandidates(c *chainplan.Chain, exact *units.Chain, budget int64, opts Options, p SimOptions) []candidate {
	out := []candidate{{name: CandidateRotor}, {name: CandidateAutoCapper}, {name: CandidateOpportunist}}
	if float64(budget) < opNeed(exact) {
		return out
	}
	solvers := []func() (Schedule, bool){
		func() (Schedule, bool) {
			plan, err := rotor.Solve(c, budget, rotorOptions(opts, exact.N))
			if err != nil {
				return Schedule{}, false
			}
			return Schedule{Compute: plan.Sequence, SyncAtLoss: true}, true
		},
		// A heuristic whose tables would pass the limit is left out, as one that finds
		// no schedule is: POFO's own tables were checked, and its plan stands without it.
		func() (Schedule, bool) {
			s, ok, err := autoCapper(c, exact, budget, opts)
			return s, ok && err == nil
		},
		func() (Schedule, bool) {
			s, ok, err := Opportunist(c, exact, budget, rematSlots(opts, budget, exact.N), opts)
			return s, ok && err == nil
		},
	}
	for i, solve := range solvers {
		start := time.Now()
		if s, ok := solve(); ok {
			out[i].s, out[i].rep = s, Replay(exact, s, p)
		}
		out[i].ms = msSince(start)
	}
	return out
}

// opNeed returns a memory below which no schedule of c exists: each F_ℓ holds at least its
// input and its output with its overhead, each B_ℓ its input, ā_ℓ, δ_ℓ, δ_{ℓ−1} and its
// overhead, none of which a transfer can free while the operation reads or writes it.
func opNeed(c *units.Chain) float64 {
	var need float64
	for l := 1; l <= c.N; l++ {
		in := min(c.A[l-1], c.ABar[l-1])
		need = max(need, in+min(c.A[l], c.ABar[l])+c.OF[l], in+c.RB(l))
	}
	return need
}

// pick returns the index of the fastest candidate whose replay is valid (the earlier one on
// ties), or −1 when none is.
func pick(cands []candidate) int {
	best := -1
	for i, cd := range cands {
		if cd.rep == nil || !cd.rep.Valid {
			continue
		}
		if best < 0 || cd.rep.Makespan < cands[best].rep.Makespan*(1-tieTol) {
			best = i
		}
	}
	return best
}

// summaries returns the candidates' outcomes for Plan.Candidates.
func summaries(cands []candidate) []chainplan.Candidate {
	out := make([]chainplan.Candidate, len(cands))
	for i, cd := range cands {
		out[i] = chainplan.Candidate{Algo: cd.name, SolveMS: cd.ms}
		if cd.rep != nil && cd.rep.Valid {
			out[i].Feasible, out[i].Makespan, out[i].PeakBytes = true, cd.rep.Makespan, cd.rep.PeakBytes
		}
	}
	return out
}

// checkDP reports the conservative DP's schedule failing its own replay: with sizes and
// states rounded up, that is a bug, not a property of the input.
func checkDP(cands []candidate, model chainplan.MemoryModel) error {
	if cd := cands[0]; cd.rep != nil && !cd.rep.Valid {
		return fmt.Errorf("pofo: internal error: the schedule does not replay in the %s model: %w", model, cd.rep.Err())
	}
	return nil
}
