package milp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// mustSolver finds HiGHS or fails: `make test` installs it into .venv, so a missing solver
// is a broken setup, not a reason to skip.
func mustSolver(tb testing.TB) *Highs {
	tb.Helper()
	h, err := FindHighs()
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

func solve(t *testing.T, m *Model, opts Options) *Solution {
	t.Helper()
	s, err := mustSolver(t).Solve(context.Background(), m, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// knapsack: values 10, 13, 7, 8, weights 5, 6, 4, 5, capacity 10: best is items 2 and 3
// (13 + 7 = 20; checked by enumerating the 16 subsets in TestKnapsack).
func knapsack() (*Model, []Var) {
	m := &Model{}
	val, wt := []float64{10, 13, 7, 8}, []float64{5, 6, 4, 5}
	var xs []Var
	var obj, cap Expr
	for i := range val {
		x := m.Binary(fmt.Sprintf("take %d", i))
		xs = append(xs, x)
		obj = obj.Add(val[i], x)
		cap = cap.Add(wt[i], x)
	}
	m.AddConstraint("capacity", cap, LE, 10)
	m.Maximize(obj)
	return m, xs
}

func TestKnapsack(t *testing.T) {
	m, xs := knapsack()
	s := solve(t, m, Options{})
	if s.Status != Optimal {
		t.Fatalf("status %v (%s), want optimal", s.Status, s.Raw)
	}
	if got, want := s.Objective, 20.0; got != want {
		t.Fatalf("objective %g, want %g", got, want)
	}
	var picked []int
	for i, x := range xs {
		if s.Bool(m, x) {
			picked = append(picked, i)
		}
	}
	if fmt.Sprint(picked) != "[1 2]" {
		t.Fatalf("picked %v, want [1 2]", picked)
	}
}

// TestBoundsAndConstants: negative, free and fixed bounds, integer variables, equality
// rows, repeated terms and constants on both sides survive the LP file.
func TestBoundsAndConstants(t *testing.T) {
	m := &Model{}
	x := m.Continuous("x", math.Inf(-1), math.Inf(1)) // free
	y := m.Integer("y", -5, 7)
	z := m.Continuous("z", -2.5, math.Inf(1))
	f := m.Continuous("fixed", 1.25, 1.25)
	// x = 2y - 3 + z (written with a repeated term and a constant), y ≥ -4.2
	m.AddConstraint("def x", Expr{}.Add(1, x).Add(-1, y).Add(-1, y).Add(-1, z).Plus(3), EQ, 0)
	m.AddConstraint("y low", Expr{}.Add(1, y), GE, -4.2)
	// minimise x + 0.5 + fixed: y = -4, z = -2.5, x = -13.5, objective -11.75
	m.Minimize(Expr{}.Add(1, x).Add(1, f).Plus(0.5))
	s := solve(t, m, Options{})
	if s.Status != Optimal {
		t.Fatalf("status %v (%s)", s.Status, s.Raw)
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"objective", s.Objective, -11.75}, {"x", s.Value(m, x), -13.5}, {"y", s.Value(m, y), -4}, {"z", s.Value(m, z), -2.5}} {
		if math.Abs(c.got-c.want) > 1e-9 {
			t.Errorf("%s = %g, want %g", c.name, c.got, c.want)
		}
	}
}

func TestInfeasible(t *testing.T) {
	m := &Model{}
	x, y := m.Integer("x", 0, 10), m.Integer("y", 0, 10)
	sum := Expr{}.Add(1, x).Add(1, y)
	m.AddConstraint("at least", sum, GE, 3)
	m.AddConstraint("at most", sum, LE, 2)
	m.Minimize(sum)
	s := solve(t, m, Options{})
	if s.Status != Infeasible || s.Values != nil {
		t.Fatalf("status %v (%s), values %v; want infeasible, none", s.Status, s.Raw, s.Values)
	}
}

// marketSplit is a market-split instance with slacks (Cornuéjols and Dawande): always
// feasible, and proving that the slack can be 0 takes HiGHS far longer than a second.
func marketSplit(n, rows int) *Model {
	r := rand.New(rand.NewPCG(3, 0))
	m := &Model{}
	xs := make([]Var, n)
	for i := range xs {
		xs[i] = m.Binary(fmt.Sprint("x", i))
	}
	var obj Expr
	for k := range rows {
		plus, minus := m.Continuous(fmt.Sprint("s+", k), 0, math.Inf(1)), m.Continuous(fmt.Sprint("s-", k), 0, math.Inf(1))
		obj = obj.Add(1, plus).Add(1, minus)
		row, total := Expr{}.Add(1, plus).Add(-1, minus), 0
		for _, x := range xs {
			w := r.IntN(100)
			total += w
			row = row.Add(float64(w), x)
		}
		m.AddConstraint(fmt.Sprint("split ", k), row, EQ, float64(total/2))
	}
	m.Minimize(obj)
	return m
}

func TestTimeLimit(t *testing.T) {
	m := marketSplit(40, 5)
	start := time.Now()
	s := solve(t, m, Options{TimeLimit: 300 * time.Millisecond})
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("the solve took %v under a 0.3 s limit", el)
	}
	if s.Status != Feasible || s.Raw != "Time limit reached" {
		t.Fatalf("status %v (%s), want feasible at the time limit", s.Status, s.Raw)
	}
	if got := s.Objective; got < 0 || math.IsNaN(got) {
		t.Fatalf("objective %g", got)
	}
}

func TestWriteLP(t *testing.T) {
	m := &Model{}
	x := m.Binary("go/x")
	y := m.Integer("y", 0, math.Inf(1))
	z := m.Continuous("z", math.Inf(-1), 4)
	m.AddConstraint("", Expr{}.Add(-2, x).Add(1e-7, y).Add(3, z).Add(0, y), LE, 1.5)
	m.Minimize(Expr{}.Add(1, z))
	var b strings.Builder
	if err := m.WriteLP(&b); err != nil {
		t.Fatal(err)
	}
	want := `\ written by chainplan planner/milp
Minimize
 obj: 1 x2_z
Subject To
 c0_: - 2 x0_go_x + 1e-07 x1_y + 3 x2_z <= 1.5
Bounds
 x1_y >= 0
 -inf <= x2_z <= 4
General
 x1_y
Binary
 x0_go_x
End
`
	if got := b.String(); got != want {
		t.Fatalf("WriteLP:\n%s\nwant:\n%s", got, want)
	}
}

func TestReadSolution(t *testing.T) {
	m, _ := knapsack()
	for _, c := range []struct {
		name, file string
		want       Status
	}{
		{"timeLimitNone", "Model status\nTime limit reached\n\n# Primal solution values\nNone\n", NoSolution},
		{"infeasible", "Model status\nInfeasible\n\n# Primal solution values\nNone\n", Infeasible},
		{"timeLimitFeasible", "Model status\nTime limit reached\n\n# Primal solution values\nFeasible\nObjective 17\n# Columns 4\nx0_take_0 1\nx1_take_1 0\nx2_take_2 1\nx3_take_3 0\n# Rows 1\n", Feasible},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := readHighsSolution(m, strings.NewReader(c.file))
			if err != nil {
				t.Fatal(err)
			}
			if s.Status != c.want {
				t.Fatalf("status %v, want %v", s.Status, c.want)
			}
		})
	}
	if _, err := readHighsSolution(m, strings.NewReader("Model status\nOptimal\n\n# Primal solution values\nFeasible\nObjective 1\n# Columns 3\n")); err == nil {
		t.Fatal("a column count that does not match the model was accepted")
	}
}

func TestNoSolver(t *testing.T) {
	t.Setenv(EnvHighs, "/nonexistent/highs")
	_, err := FindHighs()
	if err == nil || !strings.Contains(err.Error(), "pip install highsbox") {
		t.Fatalf("FindHighs with a bad %s: %v, want ErrNoSolver with the install hint", EnvHighs, err)
	}
}

// TestSetHighs: the program SetHighs chose answers before $CHAINPLAN_HIGHS and every
// search; a chosen path that is no program is an error naming it, not a quiet search
// elsewhere; SetHighs("") restores the search.
func TestSetHighs(t *testing.T) {
	found := mustSolver(t)
	t.Cleanup(func() { SetHighs("", "") })
	t.Setenv(EnvHighs, "/nonexistent/highs")
	SetHighs(found.Path, "highsbox")
	h, err := FindHighs()
	if err != nil || h.Path != found.Path || !strings.Contains(h.Origin, "highsbox") {
		t.Fatalf("FindHighs after SetHighs = %+v, %v; want %s from the caller", h, err, found.Path)
	}
	if s := solve(t, func() *Model { m, _ := knapsack(); return m }(), Options{}); s.Status != Optimal {
		t.Fatalf("the chosen program solved the knapsack with status %v", s.Status)
	}
	SetHighs(t.TempDir(), "highsbox")
	if _, err := FindHighs(); !errors.Is(err, ErrNoSolver) || !strings.Contains(err.Error(), "highsbox") {
		t.Fatalf("FindHighs with a folder chosen: %v, want ErrNoSolver naming where it came from", err)
	}
	SetHighs("", "")
	t.Setenv(EnvHighs, found.Path)
	if h, err := FindHighs(); err != nil || h.Origin != OriginEnv {
		t.Fatalf("FindHighs after SetHighs(\"\") = %+v, %v; want the program of %s", h, err, EnvHighs)
	}
}
