package stageopt

import (
	"context"
	"errors"
	"sort"

	"github.com/chainplan/chainplan/planner/milp"
)

// MaxILPNodes is the largest stage (in operations) Options solves by the exact ILP; larger
// ones get the greedy.
const MaxILPNodes = 400

// DefaultPoints is how many memory budgets between keeping nothing and keeping everything
// Options solves at (the default of Settings.Points).
const DefaultPoints = 3

// Option is one operation-level option: the nodes the first forward keeps, the bytes they
// hold and the recomputation's time, by the graph's costs (the profiler measures both).
type Option struct {
	Keep   []int   `json:"keep"`
	Bytes  int64   `json:"bytes"`
	Time   float64 `json:"time"`
	Method string  `json:"method"` // "none" (keep nothing), "ilp" or "greedy"
}

// Settings tunes Options. The zero value gives the defaults.
type Settings struct {
	// Points is the number of budgets between none and all (default DefaultPoints).
	Points int
	// Solver solves the ILP; nil looks for HiGHS (milp.FindHighs) and falls back to the
	// greedy when there is none.
	Solver milp.Solver
	// Greedy forces the greedy whatever the stage's size.
	Greedy bool
	// MILP tunes the solver (time limit, threads).
	MILP milp.Options
}

// Options returns the options of g (package comment): keeping nothing, and the best kept
// set at Points budgets spread evenly between nothing and everything the candidates hold,
// without duplicates or dominated points, in increasing bytes. The notes say how each was
// found when a fallback was taken (no solver, a solver error).
//
// The time complexity is that of Points ILPs, or O(C²·(N+E)) for the greedy, with C
// candidates, N nodes and E edges.
func Options(ctx context.Context, g *Graph, s Settings) (opts []Option, notes []string, err error) {
	if err := g.Validate(); err != nil {
		return nil, nil, err
	}
	if s.Points <= 0 {
		s.Points = DefaultPoints
	}
	cands := g.Candidates()
	var total int64
	for _, c := range cands {
		total += g.cost(c)
	}
	t0, _ := g.Evaluate(nil)
	opts = append(opts, Option{Keep: []int{}, Bytes: 0, Time: t0, Method: "none"})
	if len(cands) == 0 {
		return opts, nil, nil
	}
	solver := s.Solver
	useILP := !s.Greedy && len(g.Nodes) <= MaxILPNodes
	if useILP && solver == nil {
		h, ferr := milp.FindHighs()
		if ferr != nil {
			notes = append(notes, "no MILP solver: greedy options ("+milp.InstallHint+")")
			useILP = false
		} else {
			solver = h
		}
	}
	var chain [][]int
	if !useILP {
		chain = greedyChain(g, cands)
	}
	for j := 1; j <= s.Points; j++ {
		budget := total * int64(j) / int64(s.Points+1)
		var keep []int
		method := "greedy"
		if useILP {
			k, ok, err := solveILP(ctx, solver, g, budget, s.MILP)
			switch {
			case err != nil && errors.Is(err, context.Canceled):
				return nil, notes, err
			case err != nil || !ok:
				notes = append(notes, "the ILP gave no solution; greedy options")
				useILP, chain = false, greedyChain(g, cands)
			default:
				keep, method = k, "ilp"
			}
		}
		if !useILP {
			keep = bestWithin(g, chain, budget)
			method = "greedy"
		}
		t, b := g.Evaluate(keep)
		opts = append(opts, Option{Keep: keep, Bytes: b, Time: t, Method: method})
	}
	return pareto(opts), notes, nil
}

// greedyChain returns the kept sets the greedy goes through: from nothing, add the
// candidate with the largest recomputation time saved per byte (the smallest index on
// ties), until every candidate is kept.
func greedyChain(g *Graph, cands []int) [][]int {
	var chain [][]int
	keep := []int{}
	left := append([]int(nil), cands...)
	cur, _ := g.Evaluate(keep)
	for len(left) > 0 {
		best, bestRatio, bestTime := -1, -1.0, 0.0
		for i, c := range left {
			t, _ := g.Evaluate(append(append([]int(nil), keep...), c))
			ratio := (cur - t) / float64(max(g.cost(c), 1))
			if best < 0 || ratio > bestRatio {
				best, bestRatio, bestTime = i, ratio, t
			}
		}
		keep = append(append([]int(nil), keep...), left[best])
		sort.Ints(keep)
		left = append(left[:best], left[best+1:]...)
		cur = bestTime
		chain = append(chain, keep)
	}
	return chain
}

// bestWithin returns the fastest set of the greedy chain within budget (nothing if none).
func bestWithin(g *Graph, chain [][]int, budget int64) []int {
	best, bestTime := []int{}, -1.0
	for _, keep := range chain {
		t, b := g.Evaluate(keep)
		if b <= budget && (bestTime < 0 || t < bestTime) {
			best, bestTime = keep, t
		}
	}
	return best
}

// pareto keeps the options no other beats on both bytes and time, in increasing bytes.
func pareto(opts []Option) []Option {
	sort.SliceStable(opts, func(i, j int) bool {
		if opts[i].Bytes != opts[j].Bytes {
			return opts[i].Bytes < opts[j].Bytes
		}
		return opts[i].Time < opts[j].Time
	})
	var out []Option
	for _, o := range opts {
		if len(out) > 0 && o.Time >= out[len(out)-1].Time {
			continue // more bytes, no faster
		}
		out = append(out, o)
	}
	return out
}
