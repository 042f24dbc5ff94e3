package madpipe

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/contiguous"
	"github.com/chainplan/chainplan/planner/milp"
	"github.com/chainplan/chainplan/planner/pipeline"
)

// Algo is the name of MadPipe's plans.
const Algo = "madpipe"

// The values of Plan.Chosen in MadPipe's plans.
const (
	ChosenMadPipe    = "madpipe"    // phase 2's schedule of a phase-1 allocation
	ChosenContiguous = "contiguous" // the optimal contiguous plan, no worse
)

// maxAttempts bounds the phase-1 allocations phase 2 tries.
const maxAttempts = 3

// retryShrinks are the shares of the memory phase 1 plans within again when phase 2
// found no schedule for its allocations at the full memory (Solve).
var retryShrinks = []float64{0.9, 0.8}

// Options tunes Solve. The zero value means the defaults.
type Options struct {
	// TimeLimit bounds the MILP solver's time over all of phase 2 (default 10 s).
	TimeLimit time.Duration
	// Solver solves the scheduling ILPs (default: the HiGHS program, milp.FindHighs).
	Solver milp.Solver
	// Trace, when set, receives an account of the run.
	Trace *Trace
	// RequireSolver makes Solve and MinMemory return an error wrapping milp.ErrNoSolver
	// when Solver is nil and milp.FindHighs finds no solver, whatever the chain, instead of
	// falling back to the best contiguous plan (marked pipeplan.FallbackNoSolver).
	RequireSolver bool
}

// Trace is what Solve did, for benchmarks and the CLI's notes.
type Trace struct {
	Phase1, Phase2, Contiguous time.Duration
	// Predicted is phase 1's best estimate T̃ (0 when it found no allocation).
	Predicted float64
	// Attempts lists phase 2's ILPs in order.
	Attempts []Attempt
	// Notes are sentences for the user: a missing solver and how to install it, why an
	// allocation gave no schedule.
	Notes []string
}

// Attempt is one scheduling ILP of phase 2.
type Attempt struct {
	Stages []pipeplan.Stage
	// Status is the solver's ("optimal", "feasible" at the time limit, ...).
	Status string
	// Period is the schedule's exact period, 0 without a schedule.
	Period  float64
	Elapsed time.Duration
}

func (t *Trace) note(format string, args ...any) {
	if t != nil {
		t.Notes = append(t.Notes, fmt.Sprintf(format, args...))
	}
}

// Solve returns MadPipe's plan for pr (see the package comment), validated, with Chosen
// saying whether phase 2's schedule or the best contiguous plan won and PredictedPeriod
// phase 1's estimate. Without a MILP solver (none given, none found by milp.FindHighs),
// phase 2 cannot run: when phase 1 found a non-contiguous allocation the plan is the best
// contiguous one with Fallback set to pipeplan.FallbackNoSolver and a note in the trace,
// or, with opts.RequireSolver, an error. With checkpointing inside stages, MadPipe also
// plans without it and returns the better plan (plan): recomputation is a choice the
// heuristic phases may take to a worse plan, never one that costs the plan without it.
// Errors: a *pipeplan.InfeasibleError when neither finds a plan, with the smallest memory
// at which Solve plans (MinMemory); an error wrapping milp.ErrNoSolver
// (opts.RequireSolver); the validator's internal error should a plan fail it.
func Solve(pr *pipeline.Problem, opts Options) (*pipeplan.Plan, error) {
	start := time.Now()
	tr := opts.Trace
	if tr == nil {
		tr = &Trace{}
	}
	if opts.TimeLimit <= 0 {
		opts.TimeLimit = defaultTimeLimit()
	}
	if err := requireSolver(opts); err != nil {
		return nil, err
	}
	if err := checkProblem(pr); err != nil {
		return nil, err
	}
	best, err := plan(pr, opts, tr)
	if err != nil {
		return nil, err
	}
	if best == nil {
		// The smallest memory at which MadPipe plans, searched for directly: the memory a
		// user raises to is one where planning succeeds, not a bound far below it.
		m, err := MinMemory(pr, opts)
		if err != nil {
			return nil, err
		}
		return nil, &pipeplan.InfeasibleError{Algo: Algo, MemoryBytes: pr.Options().MemoryBytes, MinMemoryBytes: m}
	}
	best.SolveMS = float64(time.Since(start).Microseconds()) / 1000
	return best, nil
}

// plan returns MadPipe's plan at pr's memory, or nil when none fits. With checkpointing
// inside stages it plans twice, with recomputation and without it (each phase 2 within
// the time limit), and returns the plan of smaller period, the recomputing one on a tie:
// phase 1's grids, its estimate of the special device and phase 2's three attempts make
// MadPipe a heuristic, and with recomputation allowed it can pick allocations it then
// schedules worse than the ones it finds without (resnet18 on two devices: 0.587 s per
// mini-batch with --checkpoint, 0.407 s without, testdata/chains/resnet18-b8-64px.json).
// Both runs keep their own trace, so the run without recomputation is the plan Solve
// returns for the same request without --checkpoint; tr gets both accounts, Predicted
// the returned plan's.
func plan(pr *pipeline.Problem, opts Options, tr *Trace) (*pipeplan.Plan, error) {
	if !pr.Options().Checkpoint {
		return planOnce(pr, opts, tr)
	}
	var with, without Trace
	p, err := planOnce(pr, opts, &with)
	if err != nil {
		return nil, err
	}
	q, err := planOnce(pr.WithoutCheckpoint(), opts, &without)
	if err != nil {
		return nil, err
	}
	tr.Phase1 += with.Phase1 + without.Phase1
	tr.Phase2 += with.Phase2 + without.Phase2
	tr.Contiguous += with.Contiguous + without.Contiguous
	tr.Attempts = append(tr.Attempts, append(with.Attempts, without.Attempts...)...)
	tr.Notes = append(tr.Notes, with.Notes...)
	tr.Predicted = with.Predicted
	if q == nil || (p != nil && q.Period >= p.Period*(1-1e-9)) {
		return p, nil
	}
	for _, n := range without.Notes {
		if !slices.Contains(tr.Notes, n) {
			tr.Notes = append(tr.Notes, n)
		}
	}
	tr.Predicted = without.Predicted
	q.Checkpoint = true // the request's option: stages could have recomputed
	if p != nil {
		tr.note("madpipe: no stage recomputes: the plan without recomputation is faster (period %.6g against %.6g)", q.Period, p.Period)
	}
	return q, nil
}

// planOnce is MadPipe at pr's memory, recomputing stages only as pr's options allow: the
// optimal contiguous plan, phase 1 and phase 2 (within opts' time limit, retried within
// less memory when phase 2 schedules nothing), the plan of smaller period, nil when none
// fits.
func planOnce(pr *pipeline.Problem, opts Options, tr *Trace) (*pipeplan.Plan, error) {
	start := time.Now()
	contig, err := contiguous.Solve(pr)
	if err != nil && !errors.Is(err, chainplan.ErrInfeasible) {
		return nil, err
	}
	tr.Contiguous = time.Since(start)

	t1 := time.Now()
	var its []iterate
	if pr.Options().GPUs > 1 {
		if its, err = phase1(pr, false); err != nil {
			return nil, err
		}
	}
	tr.Phase1 = time.Since(t1)
	if len(its) > 0 {
		tr.Predicted = its[0].estimate()
	}

	t2 := time.Now()
	own, noSolver := phase2(pr, its, contig, opts, tr)
	// Phase 1 estimates the special device's memory optimistically against the ILP's
	// exact account, so its allocation at the full memory may have no schedule there
	// while one planned for less memory has: a device of 22 GB would otherwise get a
	// slower plan than one of 20 GB (vgg16, P = 2). Plan again within less memory, the
	// ILP still scheduling at the full memory, within what is left of the time limit.
	deadline := t2.Add(opts.TimeLimit)
	for _, shrink := range retryShrinks {
		if own != nil || noSolver || len(tr.Attempts) == 0 || time.Until(deadline) < 100*time.Millisecond {
			break
		}
		t := time.Now()
		more, err := phase1Within(pr, false, shrink*float64(pr.Limit()))
		if err != nil {
			return nil, err
		}
		tr.Phase1 += time.Since(t)
		retry := opts
		retry.TimeLimit = time.Until(deadline)
		own, _ = phase2(pr, more, contig, retry, tr)
	}
	tr.Phase2 = time.Since(t2)

	best := contig
	if own != nil && (contig == nil || own.Period < contig.Period*(1-1e-9)) {
		best = own
	}
	if best == nil {
		return nil, nil
	}
	out := *best
	out.Chosen = ChosenContiguous
	if best == own {
		out.Chosen = ChosenMadPipe
	}
	if noSolver {
		out.Fallback = pipeplan.FallbackNoSolver
	}
	out.Algo = Algo
	out.PredictedPeriod = tr.Predicted
	return &out, nil
}

func defaultTimeLimit() time.Duration { return milp.DefaultTimeLimit }

// requireSolver returns, when opts.RequireSolver is set and no solver is given or found,
// the error that refuses the contiguous fallback.
func requireSolver(opts Options) error {
	if !opts.RequireSolver || opts.Solver != nil {
		return nil
	}
	if _, err := milp.FindHighs(); err != nil {
		return fmt.Errorf("madpipe schedules its allocations with a MILP solver and the request refuses the contiguous fallback: %w", err)
	}
	return nil
}
