package pipedream

import "strings"

// dag is a Graph with integer node indices, adjacency lists and a topological order.
type dag struct {
	nodes []Node
	pred  [][]int
	succ  [][]int
	order []int // topological order, file order among independent nodes
	pos   []int // pos[v]: v's position in order
	alive []bool
}

// newDAG indexes g, which Parse has checked to be acyclic with declared endpoints.
func newDAG(g *Graph) *dag {
	n := len(g.Nodes)
	d := &dag{nodes: g.Nodes, pred: make([][]int, n), succ: make([][]int, n), pos: make([]int, n), alive: make([]bool, n)}
	idx := make(map[string]int, n)
	for i, nd := range g.Nodes {
		idx[nd.ID] = i
		d.alive[i] = true
	}
	indeg := make([]int, n)
	for _, e := range g.Edges {
		a, b := idx[e.From], idx[e.To]
		d.succ[a] = append(d.succ[a], b)
		d.pred[b] = append(d.pred[b], a)
		indeg[b]++
	}
	// Kahn's algorithm, always taking the ready node declared first, so that the order
	// (and the names and order of merged nodes) does not depend on map iteration.
	ready := []int{}
	for i := 0; i < n; i++ {
		if indeg[i] == 0 {
			ready = append(ready, i)
		}
	}
	for len(ready) > 0 {
		best := 0
		for j := range ready {
			if ready[j] < ready[best] {
				best = j
			}
		}
		v := ready[best]
		ready = append(ready[:best], ready[best+1:]...)
		d.pos[v] = len(d.order)
		d.order = append(d.order, v)
		for _, s := range d.succ[v] {
			if indeg[s]--; indeg[s] == 0 {
				ready = append(ready, s)
			}
		}
	}
	return d
}

// isInput reports whether v is a source that PipeDream marks as a model input.
func (d *dag) isInput(v int) bool {
	return len(d.pred[v]) == 0 && strings.HasPrefix(d.nodes[v].Desc, "Input")
}

// liveSuccs counts v's successors still in the graph.
func (d *dag) liveSuccs(v int) int {
	n := 0
	for _, s := range d.succ[v] {
		if d.alive[s] {
			n++
		}
	}
	return n
}

// dropConstants removes the nodes that depend on no input and cost nothing, and returns
// their ids. A node depending on no input but with a cost (a learned constant) stays: it
// is computed with the first layer that needs it.
func (d *dag) dropConstants() []string {
	data := make([]bool, len(d.nodes)) // depends on an input
	var dropped []string
	for _, v := range d.order {
		if d.isInput(v) {
			data[v] = true
			continue
		}
		for _, p := range d.pred[v] {
			data[v] = data[v] || data[p]
		}
		n := &d.nodes[v]
		if !data[v] && n.FwdMS == 0 && n.BwdMS == 0 && n.ParamBytes == 0 {
			d.alive[v] = false
			dropped = append(dropped, n.ID)
		}
	}
	return dropped
}

// ancestors marks out and every live node with a path to it.
func (d *dag) ancestors(out int) []bool {
	mark := make([]bool, len(d.nodes))
	mark[out] = true
	for i := d.pos[out]; i >= 0; i-- {
		v := d.order[i]
		if !mark[v] {
			continue
		}
		for _, p := range d.pred[v] {
			if d.alive[p] && !d.isInput(p) {
				mark[p] = true
			}
		}
	}
	return mark
}

// cutNodes returns the dominators of out in the core graph with a virtual source before
// every core node without a core predecessor, in topological order, out last. It runs
// the Cooper-Harvey-Kennedy intersection once in topological order, which is exact on
// a DAG: every predecessor's dominator is final before its successors are visited.
func (d *dag) cutNodes(out int, core []bool) []int {
	const source = -1
	idom := map[int]int{}
	intersect := func(a, b int) int {
		for a != b {
			for a != source && (b == source || d.pos[a] > d.pos[b]) {
				a = idom[a]
			}
			for b != source && (a == source || d.pos[b] > d.pos[a]) {
				b = idom[b]
			}
		}
		return a
	}
	for _, v := range d.order {
		if !core[v] {
			continue
		}
		dom, first := source, true
		for _, p := range d.pred[v] {
			if !core[p] {
				continue
			}
			if first {
				dom, first = p, false
			} else {
				dom = intersect(dom, p)
			}
		}
		idom[v] = dom
	}
	var cuts []int
	for v := out; v != source; v = idom[v] {
		cuts = append(cuts, v)
	}
	for i, j := 0, len(cuts)-1; i < j; i, j = i+1, j-1 {
		cuts[i], cuts[j] = cuts[j], cuts[i]
	}
	return cuts
}
