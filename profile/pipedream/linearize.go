package pipedream

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/chainplan/chainplan"
)

// ErrNotLinear reports a profile whose graph cannot be collapsed into a chain.
var ErrNotLinear = errors.New("pipedream: cannot be linearized")

// LinearizeError says why a graph cannot become a chain.
type LinearizeError struct{ Msg string }

func (e *LinearizeError) Error() string { return "pipedream profile cannot be linearized: " + e.Msg }

// Unwrap makes errors.Is(err, ErrNotLinear) true.
func (e *LinearizeError) Unwrap() error { return ErrNotLinear }

// Layer is one layer of the linearized chain: the cut node that ends it and every node
// merged into it, in topological order (Cut last among the nodes on the way to the
// output; side-branch nodes after it).
type Layer struct {
	Cut   string
	Nodes []string
}

// Import is a linearized profile: the chain, its layers and what was left out.
type Import struct {
	Chain  *chainplan.Chain
	Layers []Layer
	// Inputs are the nodes taken as the chain input (their sizes make input_bytes).
	Inputs []string
	// Constants are nodes dropped because they compute nothing from the input.
	Constants []string
	// Side are nodes that do not lead to the output (unused tuple elements, auxiliary
	// heads), folded into the layer that produces their inputs.
	Side []string
	// Output is the node whose output the chain ends with.
	Output string
}

// msToS converts PipeDream's milliseconds to the seconds of chain files.
const msToS = 1e-3

// Linearize collapses g into a chain (docs/formats.md, "Importing PipeDream profiles"):
//
//  1. Source nodes whose description starts with "Input" are the chain input: their
//     activation sizes add up to input_bytes, and their times (PipeDream times data
//     loading there) are dropped, as PipeDream's own partitioner does.
//  2. Nodes that depend on no input and cost nothing (no time, no weights), such as
//     GNMT's initial "hidden" state and its __getitem__ views, are constants and dropped.
//  3. The output is the sink that depends on the most nodes (its ancestors); nodes that
//     do not lead to it are side nodes.
//  4. The cut nodes are the output's dominators: the nodes every input-to-output path
//     crosses. Each ends one layer, which holds it and the nodes between it and the
//     previous cut node.
//  5. A side node joins the layer of its latest predecessor; it may read only tensors of
//     that layer or the layer's input, else the graph is refused (its tensor would have
//     to cross a cut). A side output is taken to feed a loss term computed where it is
//     produced (Inception's auxiliary classifier), so it crosses no stage boundary.
//
// A layer's times are the sums of its nodes' times converted from milliseconds to
// seconds, its out_bytes the cut node's activation size, its saved_bytes the sum of its
// nodes' activation sizes (an upper bound: views and in-place results count again) and
// its param_bytes the sum of its nodes' parameter sizes. The loss is all zero: PipeDream
// profiles have no loss node.
func Linearize(g *Graph) (*Import, error) {
	d := newDAG(g)
	imp := &Import{Chain: &chainplan.Chain{Format: chainplan.ChainFormat}}
	for _, v := range d.order {
		if d.isInput(v) {
			imp.Inputs = append(imp.Inputs, d.nodes[v].ID)
			imp.Chain.InputBytes += d.nodes[v].ActBytes
		}
	}
	imp.Constants = d.dropConstants()
	out, err := d.output()
	if err != nil {
		return nil, err
	}
	imp.Output = d.nodes[out].ID
	core := d.ancestors(out)
	cuts := d.cutNodes(out, core)
	layerOf := d.coreLayers(cuts, core)
	side, err := d.sideLayers(cuts, core, layerOf)
	if err != nil {
		return nil, err
	}
	for _, v := range side {
		imp.Side = append(imp.Side, d.nodes[v].ID)
	}
	imp.Layers = make([]Layer, len(cuts))
	for k, c := range cuts {
		imp.Layers[k].Cut = d.nodes[c].ID
	}
	members := make([][]int, len(cuts))
	for _, v := range d.order {
		if k, ok := layerOf[v]; ok {
			members[k] = append(members[k], v)
			imp.Layers[k].Nodes = append(imp.Layers[k].Nodes, d.nodes[v].ID)
		}
	}
	for k, c := range cuts {
		imp.Chain.Stages = append(imp.Chain.Stages, d.stage(c, members[k]))
	}
	if err := imp.Chain.Validate(); err != nil {
		return nil, fmt.Errorf("pipedream: linearized chain: %w", err)
	}
	return imp, nil
}

// stage sums the measurements of a layer's nodes.
func (d *dag) stage(cut int, members []int) chainplan.Stage {
	n := &d.nodes[cut]
	st := chainplan.Stage{Name: layerName(n, len(members)), OutBytes: n.ActBytes}
	for _, v := range members {
		m := &d.nodes[v]
		st.FwdTime += m.FwdMS * msToS
		st.BwdTime += m.BwdMS * msToS
		st.SavedBytes += m.ActBytes
		st.ParamBytes += m.ParamBytes
	}
	return st
}

// layerName is the cut node's id and the operation of its description ("node14 MaxPool2d"),
// with the number of merged nodes when there are several.
func layerName(n *Node, size int) string {
	op := n.Desc
	if i := strings.IndexAny(op, "( "); i > 0 {
		op = op[:i]
	}
	name := n.ID
	if op != "" {
		name += " " + op
	}
	if size > 1 {
		name += fmt.Sprintf(" (%d nodes)", size)
	}
	return name
}

// describe names a node for messages: its id and description.
func (d *dag) describe(v int) string {
	n := &d.nodes[v]
	desc := n.Desc
	if len(desc) > 40 {
		desc = desc[:40] + "..."
	}
	return fmt.Sprintf("%s (%s, line %d)", n.ID, desc, n.Line)
}

// output picks the sink that depends on the most nodes, refusing a tie between two.
func (d *dag) output() (int, error) {
	best, bestN, tie := -1, -1, -1
	for _, v := range d.order {
		if !d.alive[v] || d.isInput(v) || d.liveSuccs(v) > 0 {
			continue
		}
		n := 0
		for _, a := range d.ancestors(v) {
			if a {
				n++
			}
		}
		switch {
		case n > bestN:
			best, bestN, tie = v, n, -1
		case n == bestN:
			tie = v
		}
	}
	if best < 0 {
		return 0, &LinearizeError{"no node computes anything from the input (every node is an Input or a constant)"}
	}
	if tie >= 0 {
		return 0, &LinearizeError{fmt.Sprintf("two outputs depend on as many nodes (%d), %s and %s: which one ends the chain is ambiguous",
			bestN, d.describe(best), d.describe(tie))}
	}
	return best, nil
}

// coreLayers assigns every node on the way to the output the index of the first cut
// node it reaches: the layer that ends there.
func (d *dag) coreLayers(cuts []int, core []bool) map[int]int {
	idx := map[int]int{}
	for k, c := range cuts {
		idx[c] = k
	}
	layer := map[int]int{}
	for i := len(d.order) - 1; i >= 0; i-- {
		v := d.order[i]
		if !core[v] {
			continue
		}
		if k, ok := idx[v]; ok {
			layer[v] = k
			continue
		}
		first := len(cuts)
		for _, s := range d.succ[v] {
			if core[s] {
				first = min(first, layer[s])
			}
		}
		layer[v] = first
	}
	return layer
}

// sideLayers places the live nodes off the way to the output in the layer of their
// latest predecessor, checking that no tensor they read crosses a cut, and returns them
// in topological order.
func (d *dag) sideLayers(cuts []int, core []bool, layer map[int]int) ([]int, error) {
	var side []int
	for _, v := range d.order {
		if !d.alive[v] || core[v] || d.isInput(v) {
			continue
		}
		k := 0
		for _, p := range d.pred[v] {
			if d.alive[p] && !d.isInput(p) {
				k = max(k, layer[p])
			}
		}
		for _, p := range d.pred[v] {
			if !d.alive[p] || d.isInput(p) || layer[p] == k {
				continue
			}
			if k == 0 || p != cuts[k-1] || layer[p] != k-1 {
				return nil, &LinearizeError{fmt.Sprintf(
					"%s leads to no output and reads %s from layer %d, but its other inputs put it in layer %d: "+
						"that tensor would have to cross the cut at %s", d.describe(v), d.describe(p), layer[p]+1, k+1,
					d.describe(cuts[layer[p]]))}
			}
		}
		layer[v] = k
		side = append(side, v)
	}
	sort.SliceStable(side, func(i, j int) bool { return d.pos[side[i]] < d.pos[side[j]] })
	return side, nil
}
