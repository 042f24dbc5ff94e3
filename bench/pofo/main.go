// Command pofo evaluates the offloading planners on the example chains, as in chapter 4 of
// the thesis (pofo spec §6.4): for budgets M = (1−α)·M^low + α·M^high, α = 0.1 … 0.9, and
// bandwidths 12, 24 and 36 GB/s, it plans each chain with rotor, offload-only (DYNPROG),
// AUTOCAPPER, OPPORTUNIST and POFO, replays every plan with the simulator, and writes the
// makespans over the sequential time, the offloaded volumes, which of its candidates POFO
// returned and why its DP lost, the solver times for 50 and 100 random stages, and the check
// of the thesis's claims C4-1 to C4-10 to docs/pofo-eval.md, with plots in
// docs/pofo-eval.svg and docs/pofo-offloaded.svg.
//
// Usage, from the repository root:
//
//	go run ./bench/pofo [-chains resnet50,resnet101,densenet121] [-out docs]
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/offload"
	"github.com/chainplan/chainplan/planner/rotor"
)

// algos are the compared planners, in table order.
var algos = []string{"rotor", "offload", "autocapper", "opportunist", "pofo"}

// alphas and bandwidths are the grid of spec §6.4.
var (
	alphas     = []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9}
	bandwidths = []float64{12e9, 24e9, 36e9}
)

// result is one replayed plan.
type result struct {
	ok         bool
	frac, intg float64 // makespan / sequential time, fractional and integral models
	offloaded  float64 // offloaded bytes / Σ ā
	solve      time.Duration
	err        string
	// POFO only: the candidate it returned and every candidate's fractional makespan over
	// the sequential time (absent: not computed or no plan).
	chosen string
	cands  map[string]float64
	// AUTOCAPPER only: its schedule timed synchronized at the loss (OR.3, the DP's model),
	// +Inf when that timing is not valid, and the schedule.
	sync      float64
	seq       []chainplan.Op
	transfers []chainplan.Transfer
}

// point is one (chain, α, β) configuration with every algorithm's result.
type point struct {
	alpha, beta float64
	budget      int64
	res         map[string]result
}

// study is the evaluation of one chain.
type study struct {
	name       string
	chain      *chainplan.Chain
	low, high  int64
	seq, saved float64
	points     []point
	// under20 is the smallest budget at which POFO stays under 20 % overhead at 12 GB/s.
	under20 int64
}

func main() {
	chains := flag.String("chains", "resnet50,resnet101,densenet121", "example chains (examples/NAME.json)")
	out := flag.String("out", "docs", "output folder")
	timing := flag.Bool("timing", true, "measure the solver on 50 and 100 random stages")
	flag.Parse()
	if err := run(strings.Split(*chains, ","), *out, *timing); err != nil {
		fmt.Fprintln(os.Stderr, "pofo:", err)
		os.Exit(1)
	}
}

func run(names []string, out string, timing bool) error {
	var studies []*study
	for _, name := range names {
		c, err := chainplan.ReadChain(filepath.Join("examples", name+".json"))
		if err != nil {
			return err
		}
		st := &study{name: name, chain: c, low: offload.LowBudget(c), high: rotor.StoreAllPeak(c), seq: c.SumTime()}
		st.saved = float64(c.InputBytes)
		for _, s := range c.Stages {
			st.saved += float64(s.SavedBytes)
		}
		for _, beta := range bandwidths {
			for _, alpha := range alphas {
				b := int64((1-alpha)*float64(st.low) + alpha*float64(st.high))
				p := point{alpha: alpha, beta: beta, budget: b, res: map[string]result{}}
				for _, a := range algos {
					p.res[a] = evaluate(st, a, b, beta)
					fmt.Fprintf(os.Stderr, "%s α=%.1f β=%.0fGB/s %-11s %s\n", name, alpha, beta/1e9, a, p.res[a].summary())
				}
				st.points = append(st.points, p)
			}
		}
		st.under20, err = smallestBudgetUnder(st, 1.2, bandwidths[0])
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "%s: POFO under 20 %% overhead at %.0fGB/s down to M^high/%.2f\n", name, bandwidths[0]/1e9, float64(st.high)/float64(st.under20))
		studies = append(studies, st)
	}
	var times []solverTime
	if timing {
		times = measureSolver()
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	if err := writePlots(out, studies); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "pofo-eval.md"), []byte(report(studies, times)), 0o644)
}

// smallestBudgetUnder returns, to 1 % of M^high, the smallest budget at which POFO's
// fractional makespan is at most limit times the sequential time at bandwidth beta: a
// bisection between POFO's smallest feasible budget and M^high, assuming the makespan does
// not grow with the budget (spec §4.12.5).
func smallestBudgetUnder(st *study, limit, beta float64) (int64, error) {
	opts := offload.Options{BandwidthBytesPerS: beta}
	lo, err := offload.MinBudgetPOFO(st.chain, opts)
	if err != nil {
		return 0, err
	}
	under := func(b int64) bool {
		p, err := offload.SolvePOFO(st.chain, b, opts)
		return err == nil && p.Makespan <= limit*st.seq
	}
	if under(lo) {
		return lo, nil
	}
	hi := st.high
	for hi-lo > st.high/100 {
		mid := lo + (hi-lo)/2
		if under(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, nil
}

func (r result) summary() string {
	if !r.ok {
		return "no plan: " + r.err
	}
	return fmt.Sprintf("%.4f / %.4f, offloaded %.2f, %v", r.frac, r.intg, r.offloaded, r.solve.Round(time.Millisecond))
}

// evaluate plans the chain at budget b and bandwidth beta and replays the plan in both
// memory models.
func evaluate(st *study, algo string, b int64, beta float64) result {
	opts := offload.Options{BandwidthBytesPerS: beta}
	start := time.Now()
	var p *chainplan.Plan
	var err error
	switch algo {
	case "rotor":
		p, err = rotor.Solve(st.chain, b, rotor.Options{})
	case "offload":
		p, err = offload.SolveDynProg(st.chain, b, opts)
	case "autocapper":
		p, err = offload.SolveAutoCapper(st.chain, b, opts)
	case "opportunist":
		p, err = offload.SolveOpportunist(st.chain, b, opts)
	default:
		p, err = offload.SolvePOFO(st.chain, b, opts)
	}
	el := time.Since(start)
	if err != nil {
		msg := err.Error()
		if i := strings.Index(msg, "; "); i >= 0 {
			msg = msg[i+2:]
		}
		return result{err: msg, solve: el}
	}
	s := offload.ScheduleOf(p)
	r := result{ok: true, solve: el}
	for _, m := range []chainplan.MemoryModel{chainplan.Fractional, chainplan.Integral} {
		rep, err := offload.Simulate(st.chain, s, offload.SimOptions{BandwidthBytesPerS: beta, LimitBytes: b, Model: m})
		if err != nil || !rep.Valid {
			return result{err: fmt.Sprintf("replay (%s): %v %v", m, err, rep.Err())}
		}
		if m == chainplan.Fractional {
			r.frac = rep.Makespan / st.seq
			r.offloaded = float64(rep.OffloadedBytes) / st.saved
		} else {
			r.intg = rep.Makespan / st.seq
		}
	}
	switch algo {
	case "pofo":
		r.chosen, r.cands = p.Chosen, map[string]float64{}
		for _, cd := range p.Candidates {
			if cd.Feasible {
				r.cands[cd.Algo] = cd.Makespan / st.seq
			}
		}
		if p.Candidates == nil { // store-all, or a plan found at a smaller budget
			r.cands[p.Chosen] = r.frac
		}
	case "autocapper":
		r.seq, r.transfers = s.Compute, s.Transfers
		s.SyncAtLoss = true
		r.sync = math.Inf(1)
		if rep, err := offload.Simulate(st.chain, s, offload.SimOptions{BandwidthBytesPerS: beta, LimitBytes: b}); err == nil && rep.Valid {
			r.sync = rep.Makespan / st.seq
		}
	}
	return r
}

// solverTime is one measured POFO solve.
type solverTime struct {
	stages int
	alpha  float64
	wall   time.Duration
}

// measureSolver times offload.SolvePOFO on seeded random chains of 50 and 100 stages at the
// default discretization (the chains of BenchmarkPOFO).
func measureSolver() []solverTime {
	var out []solverTime
	for _, l := range []int{50, 100} {
		c, beta := randomChain(l)
		for _, alpha := range []float64{0.2, 0.5, 0.8} {
			b := int64((1-alpha)*float64(offload.LowBudget(c)) + alpha*float64(rotor.StoreAllPeak(c)))
			start := time.Now()
			if _, err := offload.SolvePOFO(c, b, offload.Options{BandwidthBytesPerS: beta}); err != nil {
				fmt.Fprintln(os.Stderr, "solver time:", err)
				continue
			}
			out = append(out, solverTime{stages: l, alpha: alpha, wall: time.Since(start)})
			fmt.Fprintf(os.Stderr, "solver: %d stages α=%.1f %v\n", l, alpha, out[len(out)-1].wall)
		}
	}
	return out
}
