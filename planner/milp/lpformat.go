package milp

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// termsPerLine keeps the LP file's lines short: CPLEX caps them at 510 characters, and
// short lines make the file readable.
const termsPerLine = 8

// colName is the name of variable v in LP files: an index-based prefix keeps names unique
// and valid whatever the caller called the variable, and the caller's name (reduced to
// letters, digits and underscores) follows for whoever reads the file.
func (m *Model) colName(v Var) string {
	return "x" + strconv.Itoa(int(v)) + "_" + sanitize(m.vars[v].name)
}

func rowName(i int, name string) string { return "c" + strconv.Itoa(i) + "_" + sanitize(name) }

func sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= 40 {
			break
		}
	}
	return b.String()
}

func num(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// merged returns the terms of e with one term per variable (coefficients summed, zeros
// dropped), in variable order: LP readers differ on repeated variables in a row.
func merged(e Expr) []Term {
	ts := slices.Clone(e.Terms)
	slices.SortStableFunc(ts, func(a, b Term) int { return int(a.Var) - int(b.Var) })
	out := ts[:0]
	for _, t := range ts {
		if n := len(out); n > 0 && out[n-1].Var == t.Var {
			out[n-1].Coef += t.Coef
			continue
		}
		out = append(out, t)
	}
	return slices.DeleteFunc(out, func(t Term) bool { return t.Coef == 0 })
}

func (m *Model) writeTerms(w *bufio.Writer, ts []Term) {
	if len(ts) == 0 && len(m.vars) > 0 {
		// An empty row or objective still needs a variable to be well formed.
		ts = []Term{{0, 0}}
	}
	for i, t := range ts {
		if i > 0 && i%termsPerLine == 0 {
			w.WriteString("\n   ")
		}
		switch {
		case t.Coef < 0:
			w.WriteString(" - ")
		case i > 0:
			w.WriteString(" + ")
		default:
			w.WriteString(" ")
		}
		w.WriteString(num(math.Abs(t.Coef)))
		w.WriteByte(' ')
		w.WriteString(m.colName(t.Var))
	}
}

// WriteLP writes the model in the CPLEX LP format that HiGHS reads. Every variable gets
// explicit bounds (the format's default lower bound is 0). The objective's constant is
// left out: Solution.Objective adds it back.
func (m *Model) WriteLP(out io.Writer) error {
	if len(m.vars) == 0 {
		return fmt.Errorf("milp: the model has no variables")
	}
	w := bufio.NewWriter(out)
	w.WriteString("\\ written by chainplan planner/milp\n")
	if m.maximize {
		w.WriteString("Maximize\n obj:")
	} else {
		w.WriteString("Minimize\n obj:")
	}
	m.writeTerms(w, merged(m.obj))
	w.WriteString("\nSubject To\n")
	for i, c := range m.cons {
		w.WriteString(" " + rowName(i, c.name) + ":")
		m.writeTerms(w, merged(c.expr))
		fmt.Fprintf(w, " %s %s\n", c.sense, num(c.rhs-c.expr.Const))
	}
	w.WriteString("Bounds\n")
	var ints, bins []string
	for v, x := range m.vars {
		name := m.colName(Var(v))
		switch x.kind {
		case Binary:
			bins = append(bins, name)
			if x.lo == x.hi { // a fixed binary keeps its fixing
				fmt.Fprintf(w, " %s = %s\n", name, num(x.lo))
			}
			continue
		case Integer:
			ints = append(ints, name)
		}
		writeBounds(w, name, x.lo, x.hi)
	}
	writeSection(w, "General", ints)
	writeSection(w, "Binary", bins)
	w.WriteString("End\n")
	return w.Flush()
}

func writeBounds(w *bufio.Writer, name string, lo, hi float64) {
	switch {
	case lo == hi:
		fmt.Fprintf(w, " %s = %s\n", name, num(lo))
	case math.IsInf(lo, -1) && math.IsInf(hi, 1):
		fmt.Fprintf(w, " %s free\n", name)
	case math.IsInf(hi, 1):
		fmt.Fprintf(w, " %s >= %s\n", name, num(lo))
	case math.IsInf(lo, -1):
		fmt.Fprintf(w, " -inf <= %s <= %s\n", name, num(hi))
	default:
		fmt.Fprintf(w, " %s <= %s <= %s\n", num(lo), name, num(hi))
	}
}

func writeSection(w *bufio.Writer, title string, names []string) {
	if len(names) == 0 {
		return
	}
	w.WriteString(title + "\n")
	for i := 0; i < len(names); i += termsPerLine {
		w.WriteString(" " + strings.Join(names[i:min(i+termsPerLine, len(names))], " ") + "\n")
	}
}
