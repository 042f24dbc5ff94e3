package pipedream

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// ErrInvalidProfile reports a graph.txt that cannot be read (see ParseError).
var ErrInvalidProfile = errors.New("pipedream: invalid profile")

// ParseError is a malformed line of a graph.txt. Line is 1-based; 0 means the file as a
// whole (an empty file, a cycle spanning several lines).
type ParseError struct {
	Line int
	Msg  string
}

func (e *ParseError) Error() string {
	if e.Line == 0 {
		return "pipedream profile: " + e.Msg
	}
	return fmt.Sprintf("pipedream profile: line %d: %s", e.Line, e.Msg)
}

// Unwrap makes errors.Is(err, ErrInvalidProfile) true.
func (e *ParseError) Unwrap() error { return ErrInvalidProfile }

// Node is one module or function of the profiled model, with PipeDream's measurements.
type Node struct {
	ID   string // "node12"
	Desc string // the module description, e.g. "Conv2d(64, 64, kernel_size=(3, 3), ...)"
	// FwdMS and BwdMS are forward_compute_time and backward_compute_time, in milliseconds.
	FwdMS, BwdMS float64
	// ActBytes is activation_size, the output's size; a list of sizes (a tuple output)
	// is summed.
	ActBytes int64
	// ParamBytes is parameter_size, one copy of the weights.
	ParamBytes int64
	Line       int // where the node is declared
}

// Edge says that To consumes From's output.
type Edge struct {
	From, To string
	Line     int
}

// Graph is a parsed profile: the nodes in file order and the edges, duplicates removed.
type Graph struct {
	Nodes []Node
	Edges []Edge
}

// metricKeys are the fields of a node line, in PipeDream's order; all are required.
var metricKeys = []string{"forward_compute_time", "backward_compute_time", "activation_size", "parameter_size"}

// Parse reads a PipeDream graph.txt: node lines
//
//	nodeN -- <description> -- forward_compute_time=<ms>, backward_compute_time=<ms>, activation_size=<bytes>, parameter_size=<bytes>
//
// and edge lines "nodeA -- nodeB" (indented with a tab in PipeDream's files). Blank lines
// are skipped. Every error is a *ParseError naming the line: an unknown or repeated field,
// a number that is negative, not finite or too large, a node declared twice, an edge to an
// undeclared node or to itself, a cycle. Byte sizes are rounded up to whole bytes.
func Parse(r io.Reader) (*Graph, error) {
	g := &Graph{}
	declared := map[string]int{} // node id -> line
	seen := map[[2]string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if strings.TrimSpace(text) == "" {
			continue
		}
		parts := strings.Split(strings.TrimSpace(text), " -- ")
		if len(parts) == 2 && !strings.Contains(parts[1], "=") {
			e := Edge{From: strings.TrimSpace(parts[0]), To: strings.TrimSpace(parts[1]), Line: line}
			if err := checkID(e.From, line); err != nil {
				return nil, err
			}
			if err := checkID(e.To, line); err != nil {
				return nil, err
			}
			if e.From == e.To {
				return nil, &ParseError{line, fmt.Sprintf("edge from %s to itself", e.From)}
			}
			if k := [2]string{e.From, e.To}; !seen[k] {
				seen[k] = true
				g.Edges = append(g.Edges, e)
			}
			continue
		}
		n, err := parseNode(parts, line)
		if err != nil {
			return nil, err
		}
		if first, dup := declared[n.ID]; dup {
			return nil, &ParseError{line, fmt.Sprintf("node %s declared again (first on line %d)", n.ID, first)}
		}
		declared[n.ID] = line
		g.Nodes = append(g.Nodes, n)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, &ParseError{line + 1, "line longer than 1 MiB"}
		}
		return nil, fmt.Errorf("read pipedream profile: %w", err)
	}
	if len(g.Nodes) == 0 {
		return nil, &ParseError{0, "no node lines (want \"nodeN -- description -- forward_compute_time=..., ...\")"}
	}
	for _, e := range g.Edges {
		for _, id := range []string{e.From, e.To} {
			if _, ok := declared[id]; !ok {
				return nil, &ParseError{e.Line, fmt.Sprintf("edge %s -- %s names undeclared node %s", e.From, e.To, id)}
			}
		}
	}
	if cyc := g.cycleEdge(); cyc != nil {
		return nil, &ParseError{cyc.Line, fmt.Sprintf("edge %s -- %s closes a cycle: a profile must be acyclic", cyc.From, cyc.To)}
	}
	return g, nil
}

// checkID rejects a node name that is empty or holds spaces (a garbled line).
func checkID(id string, line int) error {
	if id == "" || strings.ContainsAny(id, " \t") {
		return &ParseError{line, fmt.Sprintf("bad node name %q in an edge line (want \"nodeA -- nodeB\")", id)}
	}
	return nil
}

// parseNode reads the parts of a node line split at " -- ": the id, the description
// (which may itself contain " -- ") and the metrics.
func parseNode(parts []string, line int) (Node, error) {
	if len(parts) < 3 {
		return Node{}, &ParseError{line, "neither a node line (\"nodeN -- description -- forward_compute_time=...\") nor an edge line (\"nodeA -- nodeB\")"}
	}
	n := Node{ID: strings.TrimSpace(parts[0]), Desc: strings.Join(parts[1:len(parts)-1], " -- "), Line: line}
	if n.ID == "" || strings.ContainsAny(n.ID, " \t") {
		return Node{}, &ParseError{line, fmt.Sprintf("bad node name %q", n.ID)}
	}
	got := map[string]string{}
	for _, kv := range strings.Split(parts[len(parts)-1], ", ") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return Node{}, &ParseError{line, fmt.Sprintf("%s: %q is not key=value", n.ID, kv)}
		}
		if !isMetric(k) {
			return Node{}, &ParseError{line, fmt.Sprintf("%s: unknown field %q (want %s)", n.ID, k, strings.Join(metricKeys, ", "))}
		}
		if _, dup := got[k]; dup {
			return Node{}, &ParseError{line, fmt.Sprintf("%s: field %q given twice", n.ID, k)}
		}
		got[k] = v
	}
	for _, k := range metricKeys {
		if _, ok := got[k]; !ok {
			return Node{}, &ParseError{line, fmt.Sprintf("%s: missing field %q", n.ID, k)}
		}
	}
	var err error
	if n.FwdMS, err = number(got["forward_compute_time"]); err != nil {
		return Node{}, &ParseError{line, fmt.Sprintf("%s: field %q: %v", n.ID, "forward_compute_time", err)}
	}
	if n.BwdMS, err = number(got["backward_compute_time"]); err != nil {
		return Node{}, &ParseError{line, fmt.Sprintf("%s: field %q: %v", n.ID, "backward_compute_time", err)}
	}
	if n.ActBytes, err = sizes(got["activation_size"]); err != nil {
		return Node{}, &ParseError{line, fmt.Sprintf("%s: field %q: %v", n.ID, "activation_size", err)}
	}
	if n.ParamBytes, err = sizes(got["parameter_size"]); err != nil {
		return Node{}, &ParseError{line, fmt.Sprintf("%s: field %q: %v", n.ID, "parameter_size", err)}
	}
	return n, nil
}

func isMetric(k string) bool {
	for _, m := range metricKeys {
		if k == m {
			return true
		}
	}
	return false
}

// number reads a finite, non-negative decimal.
func number(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%q is not a number", s)
	case math.IsNaN(v) || math.IsInf(v, 0):
		return 0, fmt.Errorf("%q is not finite", s)
	case v < 0:
		return 0, fmt.Errorf("negative value %s", s)
	}
	return v, nil
}

// maxBytes bounds a size so that sums over a whole model stay far from int64 overflow.
const maxBytes = 1 << 50

// sizes reads a byte size, or a list "[a; b; c]" of sizes (a tuple output), whose sum it
// returns, rounded up to a whole byte.
func sizes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	items := []string{t}
	if strings.HasPrefix(t, "[") {
		if !strings.HasSuffix(t, "]") {
			return 0, fmt.Errorf("%q: a list of sizes must end with ']'", s)
		}
		items = strings.Split(t[1:len(t)-1], ";")
	}
	var total float64
	for _, it := range items {
		v, err := number(it)
		if err != nil {
			return 0, err
		}
		total += v
	}
	if total > maxBytes {
		return 0, fmt.Errorf("%q: larger than %d bytes", s, int64(maxBytes))
	}
	return int64(math.Ceil(total)), nil
}

// cycleEdge returns an edge that closes a cycle, or nil when the graph is acyclic.
func (g *Graph) cycleEdge() *Edge {
	const (
		white = iota
		grey
		black
	)
	out := map[string][]int{}
	for i, e := range g.Edges {
		out[e.From] = append(out[e.From], i)
	}
	color := map[string]int{}
	// Iterative depth-first search: profiles have hundreds of nodes, but a fuzzed one may
	// be a path deep enough to matter for recursion.
	type frame struct {
		id   string
		next int
	}
	for _, n := range g.Nodes {
		if color[n.ID] != white {
			continue
		}
		stack := []frame{{n.ID, 0}}
		color[n.ID] = grey
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			if top.next == len(out[top.id]) {
				color[top.id] = black
				stack = stack[:len(stack)-1]
				continue
			}
			e := &g.Edges[out[top.id][top.next]]
			top.next++
			switch color[e.To] {
			case grey:
				return e
			case white:
				color[e.To] = grey
				stack = append(stack, frame{e.To, 0})
			}
		}
	}
	return nil
}
