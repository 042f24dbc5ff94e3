package milp

import (
	"fmt"
	"math"
)

// Kind is the domain of a variable.
type Kind int

// The variable kinds.
const (
	Continuous Kind = iota
	Integer
	Binary
)

// Var is a variable of one Model: its index in the order of creation.
type Var int

// Term is coef·v.
type Term struct {
	Coef float64
	Var  Var
}

// Expr is a linear expression Σ terms + Const. The zero value is 0.
type Expr struct {
	Terms []Term
	Const float64
}

// Add returns e + coef·v. Like append, it may reuse e's storage: extend a shared prefix
// from a Clone.
func (e Expr) Add(coef float64, v Var) Expr {
	e.Terms = append(e.Terms, Term{coef, v})
	return e
}

// Plus returns e + c.
func (e Expr) Plus(c float64) Expr {
	e.Const += c
	return e
}

// Clone returns a copy of e that shares no storage with it.
func (e Expr) Clone() Expr {
	return Expr{Terms: append([]Term(nil), e.Terms...), Const: e.Const}
}

// Sense says how a constraint compares its expression with its right-hand side.
type Sense int

// The constraint senses.
const (
	LE Sense = iota // expression ≤ rhs
	GE              // expression ≥ rhs
	EQ              // expression = rhs
)

func (s Sense) String() string {
	switch s {
	case LE:
		return "<="
	case GE:
		return ">="
	case EQ:
		return "="
	}
	return fmt.Sprintf("Sense(%d)", int(s))
}

type variable struct {
	name   string
	kind   Kind
	lo, hi float64
}

type constraint struct {
	name  string
	expr  Expr
	sense Sense
	rhs   float64
}

// Model is a mixed-integer linear program. Build it with the Add methods, then solve it
// with a Solver. A Model is not safe for concurrent modification.
type Model struct {
	vars     []variable
	cons     []constraint
	obj      Expr
	maximize bool
}

// NumVars returns the number of variables.
func (m *Model) NumVars() int { return len(m.vars) }

// NumConstraints returns the number of constraints.
func (m *Model) NumConstraints() int { return len(m.cons) }

// NumIntegers returns the number of integer and binary variables.
func (m *Model) NumIntegers() int {
	n := 0
	for _, v := range m.vars {
		if v.kind != Continuous {
			n++
		}
	}
	return n
}

// AddVar adds a variable with bounds lo ≤ v ≤ hi (±Inf for none) and returns it. The name
// is for people reading the LP file; any text will do. It panics on lo > hi or a NaN
// bound, a programming error.
func (m *Model) AddVar(name string, kind Kind, lo, hi float64) Var {
	if math.IsNaN(lo) || math.IsNaN(hi) || lo > hi {
		panic(fmt.Sprintf("milp: variable %q: bad bounds [%g, %g]", name, lo, hi))
	}
	if kind == Binary {
		lo, hi = math.Max(lo, 0), math.Min(hi, 1)
	}
	m.vars = append(m.vars, variable{name, kind, lo, hi})
	return Var(len(m.vars) - 1)
}

// Continuous adds a continuous variable with bounds [lo, hi].
func (m *Model) Continuous(name string, lo, hi float64) Var {
	return m.AddVar(name, Continuous, lo, hi)
}

// Integer adds an integer variable with bounds [lo, hi].
func (m *Model) Integer(name string, lo, hi float64) Var { return m.AddVar(name, Integer, lo, hi) }

// Binary adds a 0/1 variable.
func (m *Model) Binary(name string) Var { return m.AddVar(name, Binary, 0, 1) }

// AddConstraint adds expr sense rhs; the expression's constant moves to the right-hand
// side. It panics on a NaN or infinite coefficient or a variable of another model.
func (m *Model) AddConstraint(name string, expr Expr, sense Sense, rhs float64) {
	m.check(name, expr)
	if math.IsNaN(rhs) {
		panic(fmt.Sprintf("milp: constraint %q: NaN right-hand side", name))
	}
	m.cons = append(m.cons, constraint{name, expr.Clone(), sense, rhs})
}

// Minimize sets the objective to minimise expr.
func (m *Model) Minimize(expr Expr) {
	m.check("objective", expr)
	m.obj, m.maximize = expr.Clone(), false
}

// Maximize sets the objective to maximise expr.
func (m *Model) Maximize(expr Expr) {
	m.check("objective", expr)
	m.obj, m.maximize = expr.Clone(), true
}

func (m *Model) check(name string, e Expr) {
	for _, t := range e.Terms {
		if t.Var < 0 || int(t.Var) >= len(m.vars) {
			panic(fmt.Sprintf("milp: %s: variable %d is not in the model", name, t.Var))
		}
		if math.IsNaN(t.Coef) || math.IsInf(t.Coef, 0) {
			panic(fmt.Sprintf("milp: %s: coefficient %g of %q", name, t.Coef, m.vars[t.Var].name))
		}
	}
	if math.IsNaN(e.Const) || math.IsInf(e.Const, 0) {
		panic(fmt.Sprintf("milp: %s: constant %g", name, e.Const))
	}
}

// Eval returns the value of e at the point x (indexed by Var).
func (e Expr) Eval(x []float64) float64 {
	s := e.Const
	for _, t := range e.Terms {
		s += t.Coef * x[t.Var]
	}
	return s
}
