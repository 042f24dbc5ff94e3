package rotor

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/discretize"
	"github.com/chainplan/chainplan/planner/internal/testchains"
	"github.com/chainplan/chainplan/planner/simulate"
)

// exact solves with unit 1 so that the spec's integer vectors apply unchanged.
var exact = Options{Slots: -1}

// mustReplay checks a plan against the simulator in exact bytes.
func mustReplay(t *testing.T, c *chainplan.Chain, p *chainplan.Plan) {
	t.Helper()
	rep := simulate.Run(discretize.Exact(c), p.Sequence, p.BudgetBytes)
	if !rep.Valid {
		t.Fatalf("%s plan does not replay: %v\nsequence: %s", p.Algo, rep.Err(), chainplan.FormatSequence(p.Sequence))
	}
	if math.Abs(rep.Makespan-p.Makespan) > 1e-9*max(1, math.Abs(p.Makespan)) {
		t.Fatalf("%s makespan %v, simulator says %v", p.Algo, p.Makespan, rep.Makespan)
	}
	if rep.Peak != p.PeakBytes {
		t.Fatalf("%s peak %d, simulator says %d", p.Algo, p.PeakBytes, rep.Peak)
	}
}

func TestSolveCases(t *testing.T) {
	for _, tc := range testchains.Cases() {
		t.Run(tc.Name, func(t *testing.T) {
			for budget, want := range tc.Want {
				p, err := Solve(tc.Chain, budget, exact)
				if want == testchains.Inf {
					if !errors.Is(err, chainplan.ErrInfeasible) {
						t.Fatalf("budget %d: got %v, want infeasible", budget, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("budget %d: %v", budget, err)
				}
				if got := p.Makespan; got != want {
					t.Fatalf("budget %d: makespan %v, want %v", budget, got, want)
				}
				mustReplay(t, tc.Chain, p)
			}
		})
	}
}

// TestExampleASequences checks the sequences of rotor spec §4.7, which depend on the tie
// rule (checkpoint branch first, smallest s').
func TestExampleASequences(t *testing.T) {
	tests := []struct {
		budget int64
		seq    string
		peak   int64
	}{
		{22, "F_ck 1, F_none 2, F_all 3, F_all 4, B 4, B 3, F_ck 1, F_all 2, B 2, F_all 1, B 1", 22},
		{24, "F_ck 1, F_ck 2, F_all 3, F_all 4, B 4, B 3, F_all 2, B 2, F_all 1, B 1", 24},
		{26, "F_all 1, F_ck 2, F_all 3, F_all 4, B 4, B 3, F_all 2, B 2, B 1", 26},
		{30, "F_ck 1, F_all 2, F_all 3, F_all 4, B 4, B 3, B 2, F_all 1, B 1", 29},
		{32, "F_all 1, F_all 2, F_all 3, F_all 4, B 4, B 3, B 2, B 1", 31},
	}
	c := testchains.ExampleA().Chain
	for _, tt := range tests {
		p, err := Solve(c, tt.budget, exact)
		if err != nil {
			t.Fatalf("budget %d: %v", tt.budget, err)
		}
		if got := chainplan.FormatSequence(p.Sequence); got != tt.seq {
			t.Errorf("budget %d:\n got %s\nwant %s", tt.budget, got, tt.seq)
		}
		if p.PeakBytes != tt.peak {
			t.Errorf("budget %d: peak %d, want %d", tt.budget, p.PeakBytes, tt.peak)
		}
	}
}

func TestExampleAMinBudget(t *testing.T) {
	c := testchains.ExampleA().Chain
	got, err := MinBudget(c, exact)
	if err != nil {
		t.Fatal(err)
	}
	if got != 22 { // rotor spec §4.7: infeasible at ≤21, feasible at 22
		t.Fatalf("MinBudget=%d, want 22", got)
	}
	_, err = Solve(c, 21, exact)
	var ie *chainplan.InfeasibleError
	if !errors.As(err, &ie) || ie.MinBudgetBytes != 22 {
		t.Fatalf("Solve(21) error %v, want InfeasibleError with minimum 22", err)
	}
	if !strings.Contains(err.Error(), "22 B") {
		t.Fatalf("message %q does not state the smallest budget", err)
	}
	if got := StoreAllPeak(c); got != 31 { // rotor spec §4.7: M_peak (3.3) = 31
		t.Fatalf("StoreAllPeak=%d, want 31", got)
	}
}

// TestCounterexampleSequence pins the persistent sequence of rotor spec §3.5 for n = 6.
func TestCounterexampleSequence(t *testing.T) {
	c := testchains.Counterexample(6).Chain
	p, err := Solve(c, 15, exact)
	if err != nil {
		t.Fatal(err)
	}
	want := "F_all 1, F_ck 2, F_none 3, F_none 4, F_none 5, F_none 6, F_none 7, F_ck 8, F_all 9, B 9, F_all 8, B 8, " +
		"F_ck 2, F_none 3, F_none 4, F_none 5, F_none 6, F_all 7, B 7, F_ck 2, F_none 3, F_none 4, F_none 5, F_all 6, B 6, " +
		"F_ck 2, F_none 3, F_none 4, F_all 5, B 5, F_ck 2, F_none 3, F_all 4, B 4, F_all 2, F_all 3, B 3, B 2, B 1"
	if got := chainplan.FormatSequence(p.Sequence); got != want {
		t.Fatalf("\n got %s\nwant %s", got, want)
	}
	if p.Makespan != 16 || p.PeakBytes != 15 {
		t.Fatalf("makespan %v peak %d, want 16 and 15", p.Makespan, p.PeakBytes)
	}
}

// reductionChain is the chain of rotor spec §4.2: n identical stages, the last playing the
// loss with δ_n = 1, ā = X, a = δ = 1, no overheads.
func reductionChain(n int, x int64, uF, uB float64) *discretize.Chain {
	c := &discretize.Chain{N: n, Unit: 1,
		UF: make([]float64, n+1), UB: make([]float64, n+1),
		A: make([]int64, n+1), ABar: make([]int64, n+1), OF: make([]int64, n+1), OB: make([]int64, n+1)}
	for l := 0; l <= n; l++ {
		c.A[l], c.ABar[l] = 1, x
		if l > 0 {
			c.UF[l], c.UB[l] = uF, uB
		}
	}
	c.ABar[0] = 1
	return c
}

// TestRevolveReduction checks C_MP(1, n, X+k) against the table of rotor spec §4.2.
func TestRevolveReduction(t *testing.T) {
	const x = 1000
	inf := math.Inf(1)
	ks := []int64{2, 3, 4, 5, 8, 12}
	want := map[int][]float64{ // rotor spec §4.2, u_F = u_B = 1, X = 1000
		1:  {2, 2, 2, 2, 2, 2},
		2:  {inf, 5, 5, 5, 5, 5},
		3:  {inf, 9, 8, 8, 8, 8},
		5:  {inf, 20, 16, 15, 14, 14},
		10: {inf, 65, 40, 35, 32, 29},
		30: {inf, 495, 186, 145, 114, 108},
	}
	for n, row := range want {
		for _, revolve := range []bool{false, true} {
			tb, err := newTable(reductionChain(n, x, 1, 1), x+12, variant{revolve: revolve})
			if err != nil {
				t.Fatal(err)
			}
			for i, k := range ks {
				if got := tb.value(1, n, 0, x+k); got != row[i] {
					t.Errorf("n=%d k=%d revolve=%v: C=%v, want %v", n, k, revolve, got, row[i])
				}
			}
		}
	}
}

// binomial optimum p(n, c) of Griewank's Revolve (rotor spec §4.1, closed form).
func revolveAdvances(n, c int64) int64 {
	if n <= 1 {
		return 0
	}
	binom := func(a, b int64) int64 {
		r := int64(1)
		for i := int64(1); i <= b; i++ {
			r = r * (a - b + i) / i
		}
		return r
	}
	t := int64(0)
	for binom(c+t, c) < n {
		t++
	}
	return t*n - binom(c+t, c+1)
}

// TestRevolveClosedForm compares the DP with p(n, k−2)·u_F + n·(u_F+u_B) (rotor spec §4.2)
// for heterogeneous forward and backward costs.
func TestRevolveClosedForm(t *testing.T) {
	const x = 1000
	for _, u := range [][2]float64{{1, 0}, {1, 1}, {2, 3}} {
		for n := 2; n <= 25; n++ {
			tb, err := newTable(reductionChain(n, x, u[0], u[1]), x+11, variant{})
			if err != nil {
				t.Fatal(err)
			}
			for k := int64(3); k <= 11; k++ {
				want := float64(revolveAdvances(int64(n), k-2))*u[0] + float64(n)*(u[0]+u[1])
				if got := tb.value(1, n, 0, x+k); got != want {
					t.Fatalf("u=%v n=%d k=%d: C=%v, want %v", u, n, k, got, want)
				}
			}
		}
	}
}

func TestSolveRejectsInvalidChain(t *testing.T) {
	c := testchains.ExampleA().Chain
	bad := *c
	bad.Stages = append([]chainplan.Stage(nil), c.Stages...)
	bad.Stages[1].SavedBytes = 1
	if _, err := Solve(&bad, 100, exact); !errors.Is(err, chainplan.ErrInvalidChain) {
		t.Fatalf("got %v, want ErrInvalidChain", err)
	}
}

// TestTooFewSlots: with fewer slots than a memory check has terms, no budget fits; the
// search must say so instead of doubling forever.
func TestTooFewSlots(t *testing.T) {
	c := testchains.ExampleA().Chain
	if _, err := MinBudget(c, Options{Slots: 2}); !errors.Is(err, chainplan.ErrUnsupported) {
		t.Fatalf("MinBudget at 2 slots: %v", err)
	}
	if _, err := Solve(c, 25, Options{Slots: 2}); !errors.Is(err, chainplan.ErrUnsupported) || !strings.Contains(err.Error(), "use more slots") {
		t.Fatalf("Solve at 2 slots: %v", err)
	}
}
