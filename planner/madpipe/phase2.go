package madpipe

import (
	"context"
	"math"
	"slices"
	"time"

	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/milp"
	"github.com/chainplan/chainplan/planner/pipeline"
)

// phase2 schedules phase 1's allocations (best estimate first) with the ILP while the
// time limit allows, and returns the best validated plan that beats bound (nil if none);
// noSolver reports that there were allocations to schedule but no solver to do it.
func phase2(pr *pipeline.Problem, its []iterate, contig *pipeplan.Plan, opts Options, tr *Trace) (best *pipeplan.Plan, noSolver bool) {
	hi := math.Inf(1)
	if contig != nil {
		hi = contig.Period
	}
	var todo [][]pipeplan.Stage
	for _, it := range its {
		st, err := allocate(pr, it.stages)
		if err != nil {
			tr.note("madpipe: allocation %v: %v", it.stages, err)
			continue
		}
		if !pipeplan.IsContiguous(st) && len(todo) < maxAttempts && !tried(tr, st) {
			todo = append(todo, st)
		}
	}
	if len(todo) == 0 {
		return nil, false
	}
	solver := opts.Solver
	if solver == nil {
		h, err := milp.FindHighs()
		if err != nil {
			tr.note("madpipe: phase 1 found a non-contiguous allocation, but no MILP solver is there to schedule it (%v); the plan is the best contiguous one", err)
			return nil, true
		}
		solver = h
	}
	deadline := time.Now().Add(opts.TimeLimit)
	for _, stages := range todo {
		left := time.Until(deadline)
		if left < 100*time.Millisecond {
			break
		}
		if p := schedule(pr, stages, hi, solver, left, tr); p != nil {
			best, hi = p, p.Period
		}
	}
	return best, false
}

// tried reports whether phase 2 already scheduled allocation st (Trace.Attempts).
func tried(tr *Trace, st []pipeplan.Stage) bool {
	return slices.ContainsFunc(tr.Attempts, func(a Attempt) bool {
		return slices.EqualFunc(a.Stages, st, func(x, y pipeplan.Stage) bool {
			return x.First == y.First && x.Last == y.Last && x.GPU == y.GPU && budgetOf(x) == budgetOf(y)
		})
	})
}

// budgetOf is the activation budget of a recomputing stage, 0 for one that records.
func budgetOf(s pipeplan.Stage) int64 {
	if s.Recompute == nil {
		return 0
	}
	return s.Recompute.BudgetBytes
}

// allocate puts phase 1's stages on devices: the special stages on one device, each
// normal stage on its own, devices numbered in order of first appearance along the chain;
// a stage phase 1 made recompute gets its rotor sequence. Errors are RecomputeStage's.
func allocate(pr *pipeline.Problem, st []stage) ([]pipeplan.Stage, error) {
	out := make([]pipeplan.Stage, len(st))
	special, next := -1, 0
	for k, s := range st {
		gpu := next
		if s.special && special >= 0 {
			gpu = special
		} else {
			if s.special {
				special = gpu
			}
			next++
		}
		out[k] = pipeplan.Stage{First: s.first, Last: s.last, GPU: gpu}
		if s.budget > 0 {
			rs, err := pr.RecomputeStage(s.first, s.last, gpu, s.budget)
			if err != nil {
				return nil, err
			}
			out[k] = rs
		}
	}
	return out, nil
}

// schedule runs the ILP for one allocation, looking for periods below hi (all periods
// when hi is infinite), and returns its validated plan or nil.
func schedule(pr *pipeline.Problem, stages []pipeplan.Stage, hi float64, solver milp.Solver, limit time.Duration, tr *Trace) *pipeplan.Plan {
	att := Attempt{Stages: stages}
	defer func() { tr.Attempts = append(tr.Attempts, att) }()
	g, err := newGraph(pr, stages)
	if err != nil {
		att.Status = "error"
		tr.note("madpipe: allocation %v: %v", stages, err)
		return nil
	}
	lb := g.loads()
	for dev, s := range g.static {
		if s > float64(pr.Limit()) {
			att.Status = "skipped"
			tr.note("madpipe: allocation %v: device %d needs %.0f bytes for weights and buffers alone", stages, dev, s)
			return nil
		}
	}
	if math.IsInf(hi, 1) {
		hi = 0
		for _, o := range g.ops {
			hi += o.dur // everything in sequence: no period beyond helps memory
		}
		hi = max(hi, lb)
	} else if lb >= hi {
		att.Status = "skipped"
		return nil
	}
	start := time.Now()
	x := newSchedulingILP(g, lb, hi)
	st, sol, err := x.solve(context.Background(), solver, milp.Options{TimeLimit: limit})
	att.Elapsed = time.Since(start)
	if err != nil {
		att.Status = "error"
		tr.note("madpipe: the scheduling ILP failed: %v", err)
		return nil
	}
	att.Status = sol.Status.String()
	if !sol.Status.HasSolution() {
		return nil
	}
	T, tau, ok := g.timing(st, lb, hi*(1+1e-6))
	if !ok {
		tr.note("madpipe: the ILP's schedule of %v has no consistent timing (solver tolerance)", stages)
		return nil
	}
	for dev, m := range g.memory(st) {
		if m > float64(pr.Limit()) {
			tr.note("madpipe: the ILP's schedule of %v overflows device %d (solver tolerance)", stages, dev)
			return nil
		}
	}
	p := g.plan(T, tau, st)
	if err := pipeline.Finalize(pr, p, true); err != nil {
		tr.note("madpipe: %v", err)
		return nil
	}
	att.Period = T
	return p
}
