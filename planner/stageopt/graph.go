package stageopt

import (
	"fmt"
	"math"
)

// Node is one operation of a stage's graph, in topological order (its inputs come first).
type Node struct {
	// Time is what running the operation costs (seconds; 0 for a view).
	Time float64 `json:"time"`
	// Bytes is the size of its value's storage: what keeping the value holds. 0 for a view,
	// whose storage is its base's.
	Bytes int64 `json:"bytes"`
	// Internal is the size of the tensors autograd saves of this operation that are no
	// node's value (kept with the operation, recomputed by running it again).
	Internal int64 `json:"internal"`
	// Inputs are the nodes it reads, by index, all earlier.
	Inputs []int `json:"inputs"`
	// Source marks what is always in memory: the stage input (kept to the backward by an
	// option), parameters, buffers, side values, constants.
	Source bool `json:"source"`
	// Output marks the stage's output, which an option keeps (docs/rotor.md).
	Output bool `json:"output"`
	// Saved says that a tensor autograd saves views this node's value: the backward reads
	// it, so a recomputation must bring it back unless it is kept.
	Saved bool `json:"saved"`
}

// Graph is one stage's operations.
type Graph struct {
	Nodes []Node `json:"nodes"`
}

// Validate checks the graph: inputs earlier than their node, non-negative and finite
// costs.
func (g *Graph) Validate() error {
	for i, n := range g.Nodes {
		if n.Time < 0 || math.IsNaN(n.Time) || math.IsInf(n.Time, 0) {
			return fmt.Errorf("stageopt: node %d: time %g is not a time", i, n.Time)
		}
		if n.Bytes < 0 || n.Internal < 0 {
			return fmt.Errorf("stageopt: node %d: negative size", i)
		}
		for _, u := range n.Inputs {
			if u < 0 || u >= i {
				return fmt.Errorf("stageopt: node %d reads node %d, which is not an earlier node", i, u)
			}
		}
	}
	return nil
}

// keepable reports whether keeping node n holds anything: a value the backward reads or
// tensors it saved itself (never a source or the output, which are there anyway).
func (g *Graph) keepable(n int) bool {
	nd := &g.Nodes[n]
	return !nd.Source && !nd.Output && (nd.Saved && nd.Bytes > 0 || nd.Internal > 0)
}

// cost returns the bytes keeping node n holds.
func (g *Graph) cost(n int) int64 {
	nd := &g.Nodes[n]
	var b int64
	if nd.Saved {
		b = nd.Bytes
	}
	return b + nd.Internal
}

// Candidates returns the nodes an option may keep, in order.
func (g *Graph) Candidates() []int {
	var out []int
	for i := range g.Nodes {
		if g.keepable(i) {
			out = append(out, i)
		}
	}
	return out
}

// Recompute returns the nodes a recomputation runs when the first forward kept the nodes
// of keep (package comment), in order: a node whose saved value or own saved tensors the
// backward reads and keep does not hold, and what those read that is neither a source nor
// a kept saved value.
func (g *Graph) Recompute(keep []int) []int {
	kept := make([]bool, len(g.Nodes))
	for _, k := range keep {
		kept[k] = true
	}
	run := make([]bool, len(g.Nodes))
	var need func(n int)
	need = func(n int) {
		if run[n] {
			return
		}
		run[n] = true
		for _, u := range g.Nodes[n].Inputs {
			nu := &g.Nodes[u]
			if nu.Source || (kept[u] && nu.Saved) || (nu.Output && nu.Saved) {
				continue
			}
			need(u)
		}
	}
	for i := range g.Nodes {
		nd := &g.Nodes[i]
		if nd.Source || nd.Output || kept[i] {
			continue
		}
		if (nd.Saved && nd.Bytes > 0) || nd.Internal > 0 {
			need(i)
		}
	}
	var out []int
	for i, r := range run {
		if r {
			out = append(out, i)
		}
	}
	return out
}

// Evaluate returns what keeping the nodes of keep costs: the recomputation's time and the
// bytes kept.
func (g *Graph) Evaluate(keep []int) (time float64, bytes int64) {
	for _, n := range g.Recompute(keep) {
		time += g.Nodes[n].Time
	}
	for _, k := range keep {
		bytes += g.cost(k)
	}
	return time, bytes
}
