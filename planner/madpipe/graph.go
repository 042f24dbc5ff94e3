package madpipe

import (
	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/pipeline"
)

// graph is the operations of one period of an allocation (spec §3.4.1) as phase 2 sees
// them: F and B of every stage on its device, CF and CB of every boundary between devices
// on the link of the pair, and the dependency chain of one mini-batch,
//
//	F_0 → [CF_0 →] F_1 → … → F_{N−1} → B_{N−1} → [CB_{N−2} →] B_{N−2} → … → B_0,
//
// a single path: seq lists its operations in order, and edge i joins seq[i] to seq[i+1].
type graph struct {
	prob   *pipeline.Problem
	stages []pipeplan.Stage
	ops    []op
	seq    []int   // operation indices along the mini-batch's path
	pos    []int   // pos[o]: the index of operation o in seq
	res    [][]int // the operations of each resource: devices 0..P−1, then the links
	f, b   []int   // f[k], b[k]: the F and B operations of stage k
	// stored[k] is what one mini-batch in flight keeps on stage k's device; static[g] is
	// device g's weights and buffers (bytes).
	stored []float64
	static []float64
}

type op struct {
	kind  pipeplan.OpKind
	stage int
	dur   float64
	res   int
	extra float64 // transient bytes while it runs (F and B; 0 for transfers)
}

// newGraph builds the graph of stages (an allocation covering the chain in order), the
// durations, stored and transient bytes from the model (pipeline.Problem.Cost). Errors
// are Cost's (a recomputing stage whose sequence does not replay).
func newGraph(prob *pipeline.Problem, stages []pipeplan.Stage) (*graph, error) {
	o := prob.Options()
	g := &graph{prob: prob, stages: stages, res: make([][]int, o.GPUs),
		f: make([]int, len(stages)), b: make([]int, len(stages)),
		stored: make([]float64, len(stages)), static: make([]float64, o.GPUs)}
	for dev, s := range prob.DeviceStatic(stages) {
		g.static[dev] = float64(s)
	}
	links := map[[2]int]int{}
	add := func(kind pipeplan.OpKind, k int, dur float64, res int, extra int64) int {
		g.ops = append(g.ops, op{kind, k, dur, res, float64(extra)})
		g.res[res] = append(g.res[res], len(g.ops)-1)
		return len(g.ops) - 1
	}
	link := func(k int) int {
		a, b := stages[k].GPU, stages[k+1].GPU
		key := [2]int{min(a, b), max(a, b)}
		r, ok := links[key]
		if !ok {
			r = len(g.res)
			links[key] = r
			g.res = append(g.res, nil)
		}
		return r
	}
	var fwd, bwd []int // the path's forward half, and its backward half in reverse
	for k, s := range stages {
		c, err := prob.Cost(s)
		if err != nil {
			return nil, err
		}
		g.stored[k] = float64(c.Stored)
		g.f[k] = add(pipeplan.F, k, c.Fwd, s.GPU, c.FwdExtra)
		g.b[k] = add(pipeplan.B, k, c.Bwd, s.GPU, c.BwdExtra)
		fwd = append(fwd, g.f[k])
		bwd = append(bwd, g.b[k])
		if g.crosses(k) {
			r, d := link(k), prob.Transfer(s.Last)
			fwd = append(fwd, add(pipeplan.CF, k, d, r, 0))
			bwd = append(bwd, add(pipeplan.CB, k, d, r, 0))
		}
	}
	g.seq = fwd
	for i := len(bwd) - 1; i >= 0; i-- {
		g.seq = append(g.seq, bwd[i])
	}
	g.pos = make([]int, len(g.ops))
	for i, o := range g.seq {
		g.pos[o] = i
	}
	return g, nil
}

// crosses reports whether stage k's output goes to another device.
func (g *graph) crosses(k int) bool {
	return k+1 < len(g.stages) && g.stages[k].GPU != g.stages[k+1].GPU
}

// loads returns the largest total duration of the operations of one resource: a lower
// bound of the period.
func (g *graph) loads() float64 {
	var lb float64
	for _, ops := range g.res {
		var s float64
		for _, o := range ops {
			s += g.ops[o].dur
		}
		lb = max(lb, s)
	}
	return lb
}
