package milp

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Status is the outcome of a solve.
type Status int

// The statuses.
const (
	// NoSolution: a limit stopped the search before any solution was found, or the solver
	// could not decide. Nothing is known about feasibility.
	NoSolution Status = iota
	// Optimal: the solution is optimal (within the solver's gap tolerance).
	Optimal
	// Feasible: a limit (usually the time limit) stopped the search with a solution in
	// hand that may not be optimal.
	Feasible
	// Infeasible: the solver proved that no solution exists. HiGHS's "infeasible or
	// unbounded" also maps here: the models of this project have bounded objectives.
	Infeasible
)

func (s Status) String() string {
	switch s {
	case Optimal:
		return "optimal"
	case Feasible:
		return "feasible"
	case Infeasible:
		return "infeasible"
	}
	return "no solution"
}

// HasSolution reports whether the status comes with variable values.
func (s Status) HasSolution() bool { return s == Optimal || s == Feasible }

// Solution is what a solver returns.
type Solution struct {
	Status Status
	// Raw is the solver's own status text, for messages ("Time limit reached").
	Raw string
	// Objective is the objective's value, its constant included (NaN without a solution).
	Objective float64
	// Values holds each variable's value, indexed by Var (nil without a solution).
	Values []float64
}

// Value returns v's value; integer and binary variables are rounded to the nearest
// integer, which removes the solver's integrality tolerance.
func (s *Solution) Value(m *Model, v Var) float64 {
	x := s.Values[v]
	if m.vars[v].kind != Continuous {
		return math.Round(x)
	}
	return x
}

// Bool returns a binary variable's value as a bool.
func (s *Solution) Bool(m *Model, v Var) bool { return s.Value(m, v) > 0.5 }

// readHighsSolution parses the solution file HiGHS writes with --solution_file (its
// default "raw" style): a "Model status" line, then "# Primal solution values" with
// "Feasible" or "None", the objective and "# Columns N" followed by "name value" lines.
func readHighsSolution(m *Model, r io.Reader) (*Solution, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<24)
	line := func() (string, bool) {
		for sc.Scan() {
			if t := strings.TrimSpace(sc.Text()); t != "" {
				return t, true
			}
		}
		return "", false
	}
	if t, ok := line(); !ok || t != "Model status" {
		return nil, fmt.Errorf("solution file: expected %q, got %q", "Model status", t)
	}
	raw, _ := line()
	sol := &Solution{Raw: raw, Objective: math.NaN(), Status: statusOf(raw)}
	if t, _ := line(); t != "# Primal solution values" {
		return nil, fmt.Errorf("solution file: expected %q, got %q", "# Primal solution values", t)
	}
	primal, _ := line()
	if primal != "Feasible" {
		// "None" or "Infeasible": no usable point, whatever the model status says.
		if sol.Status.HasSolution() {
			sol.Status = NoSolution
		}
		return sol, nil
	}
	if sol.Status != Optimal {
		sol.Status = Feasible
	}
	obj, _ := line()
	f, ok := strings.CutPrefix(obj, "Objective ")
	if !ok {
		return nil, fmt.Errorf("solution file: expected the objective, got %q", obj)
	}
	objective, err := strconv.ParseFloat(f, 64)
	if err != nil {
		return nil, fmt.Errorf("solution file: objective: %w", err)
	}
	cols, _ := line()
	var n int
	if _, err := fmt.Sscanf(cols, "# Columns %d", &n); err != nil || n != len(m.vars) {
		return nil, fmt.Errorf("solution file: expected %d columns, got %q", len(m.vars), cols)
	}
	index := make(map[string]Var, n)
	for v := range m.vars {
		index[m.colName(Var(v))] = Var(v)
	}
	sol.Values = make([]float64, n)
	for range n {
		t, _ := line()
		name, val, ok := strings.Cut(t, " ")
		v, known := index[name]
		x, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if !ok || !known || err != nil {
			return nil, fmt.Errorf("solution file: bad column line %q", t)
		}
		sol.Values[v] = x
	}
	sol.Objective = objective + m.obj.Const
	return sol, sc.Err()
}

func statusOf(raw string) Status {
	switch raw {
	case "Optimal":
		return Optimal
	case "Infeasible", "Primal infeasible or unbounded":
		return Infeasible
	}
	return NoSolution
}
