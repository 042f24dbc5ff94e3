package stageopt

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/chainplan/chainplan/planner/milp"
)

// randomGraph draws a stage of n operations: a few sources (the input and parameters),
// then operations reading one to three earlier nodes, some of them views (free, no
// storage of their own), some saved, some with tensors of their own saved, the last the
// output.
func randomGraph(rng *rand.Rand, n int) *Graph {
	g := &Graph{}
	sources := 1 + rng.IntN(2)
	for i := 0; i < n; i++ {
		if i < sources {
			g.Nodes = append(g.Nodes, Node{Source: true})
			continue
		}
		nd := Node{Time: float64(1 + rng.IntN(9)), Bytes: int64(1 + rng.IntN(16))}
		for range 1 + rng.IntN(3) {
			nd.Inputs = append(nd.Inputs, rng.IntN(i))
		}
		if rng.IntN(5) == 0 { // a view
			nd.Time, nd.Bytes = 0, 0
			nd.Inputs = nd.Inputs[:1]
		}
		nd.Saved = rng.IntN(2) == 0
		if rng.IntN(4) == 0 {
			nd.Internal = int64(1 + rng.IntN(4))
		}
		g.Nodes = append(g.Nodes, nd)
	}
	g.Nodes[n-1].Output = true
	return g
}

// bruteBest is the least recomputation time over every kept set within budget.
func bruteBest(g *Graph, budget int64) float64 {
	cands := g.Candidates()
	best := math.Inf(1)
	for mask := 0; mask < 1<<len(cands); mask++ {
		var keep []int
		for j, c := range cands {
			if mask&(1<<j) != 0 {
				keep = append(keep, c)
			}
		}
		if t, b := g.Evaluate(keep); b <= budget && t < best {
			best = t
		}
	}
	return best
}

// TestILPMatchesBruteForce compares the ILP's kept set with the exhaustive search over
// every set on small random stages at several budgets: the same least time, and the ILP's
// set fits its budget with the time Evaluate gives it.
func TestILPMatchesBruteForce(t *testing.T) {
	h, err := milp.FindHighs()
	if err != nil {
		t.Fatalf("the ILP needs HiGHS: %v", err)
	}
	rng := rand.New(rand.NewPCG(19, 1))
	count := 60
	if testing.Short() {
		count = 25
	}
	for i := 0; i < count; i++ {
		g := randomGraph(rng, 4+rng.IntN(9))
		var total int64
		for _, c := range g.Candidates() {
			total += g.cost(c)
		}
		for _, budget := range []int64{0, total / 4, total / 2, 3 * total / 4, total} {
			keep, ok, err := solveILP(context.Background(), h, g, budget, milp.Options{})
			if err != nil || !ok {
				t.Fatalf("graph %d budget %d: %v (ok %v)", i, budget, err, ok)
			}
			got, bytes := g.Evaluate(keep)
			if bytes > budget {
				t.Fatalf("graph %d budget %d: the ILP keeps %d bytes", i, budget, bytes)
			}
			if want := bruteBest(g, budget); math.Abs(got-want) > 1e-9 {
				t.Fatalf("graph %d budget %d: ILP %v (keep %v), brute force %v\n%+v", i, budget, got, keep, want, g.Nodes)
			}
		}
	}
}

// TestOptions checks the option sets of random stages, by the ILP and by the greedy: they
// start with keeping nothing, grow in bytes while their time falls, each option's cost is
// Evaluate's, and the greedy's are never faster than the brute force at their bytes.
func TestOptions(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 2))
	for i := 0; i < 30; i++ {
		g := randomGraph(rng, 4+rng.IntN(9))
		for _, greedy := range []bool{false, true} {
			opts, notes, err := Options(context.Background(), g, Settings{Greedy: greedy})
			if err != nil || len(notes) > 0 {
				t.Fatalf("graph %d greedy=%v: %v %v", i, greedy, err, notes)
			}
			if len(opts[0].Keep) != 0 || opts[0].Method != "none" {
				t.Fatalf("graph %d: the first option is %+v, want keeping nothing", i, opts[0])
			}
			for j, o := range opts {
				tm, b := g.Evaluate(o.Keep)
				if tm != o.Time || b != o.Bytes {
					t.Fatalf("graph %d option %d: %+v, Evaluate says %v, %d", i, j, o, tm, b)
				}
				if j > 0 && (o.Bytes <= opts[j-1].Bytes || o.Time >= opts[j-1].Time) {
					t.Fatalf("graph %d: options %d and %d are not a front: %+v", i, j-1, j, opts)
				}
				if want := bruteBest(g, o.Bytes); o.Time < want-1e-9 {
					t.Fatalf("graph %d option %d: time %v below the optimum %v", i, j, o.Time, want)
				}
			}
		}
	}
}

// TestRecomputeExample: a Linear | GELU | Linear block (input x, weights w1, w2). The
// backward reads x, the first product h (GELU's input) and GELU's output g (the second
// Linear's input). Keeping nothing recomputes both; keeping h recomputes only the cheap
// GELU; keeping g recomputes the first product only.
func TestRecomputeExample(t *testing.T) {
	g := &Graph{Nodes: []Node{
		{Source: true}, // 0 x (the stage input)
		{Source: true}, // 1 w1
		{Source: true}, // 2 w2
		{Time: 10, Bytes: 40, Inputs: []int{0, 1}, Saved: true},  // 3 h = x @ w1
		{Time: 1, Bytes: 40, Inputs: []int{3}, Saved: true},      // 4 g = gelu(h)
		{Time: 10, Bytes: 10, Inputs: []int{4, 2}, Output: true}, // 5 y = g @ w2
	}}
	for _, tt := range []struct {
		keep   []int
		run    []int
		time   float64
		memory int64
	}{
		{nil, []int{3, 4}, 11, 0},
		{[]int{3}, []int{4}, 1, 40},
		{[]int{4}, []int{3}, 10, 40},
		{[]int{3, 4}, nil, 0, 80},
	} {
		if got := g.Recompute(tt.keep); len(got) != len(tt.run) || (len(got) > 0 && got[0] != tt.run[0]) {
			t.Errorf("Recompute(%v) = %v, want %v", tt.keep, got, tt.run)
		}
		if tm, b := g.Evaluate(tt.keep); tm != tt.time || b != tt.memory {
			t.Errorf("Evaluate(%v) = %v, %d; want %v, %d", tt.keep, tm, b, tt.time, tt.memory)
		}
	}
	opts, _, err := Options(context.Background(), g, Settings{Points: 1})
	if err != nil {
		t.Fatal(err)
	}
	// Half the bytes (40): keep h, the expensive product, and recompute the GELU.
	if len(opts) != 2 || len(opts[1].Keep) != 1 || opts[1].Keep[0] != 3 {
		t.Fatalf("options %+v, want keeping nothing, then keeping h", opts)
	}
}
