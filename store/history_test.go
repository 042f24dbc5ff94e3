package store_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/store"
)

// buildHistory fills db with runs synthetic profiles (sampleProfile 0..runs-1, reps
// repetitions), two rotor plans per run at budgets of half and a quarter of the run's
// activation memory, and, for three runs in four, executions of those plans: the shape of
// history docs/sql.md's examples ask questions of.
func buildHistory(tb testing.TB, db *store.DB, runs, reps int) {
	tb.Helper()
	ctx := context.Background()
	for i := range runs {
		p := sampleProfile(i, 0, reps)
		res, err := db.Ingest(ctx, p)
		if err != nil {
			tb.Fatal(err)
		}
		var saved int64
		for _, s := range p.Stages {
			saved += s.SavedBytes.Int64
		}
		// A schedule that checkpoints every stage and recomputes each once: L forwards
		// without graph, the loss, then F_all ℓ and B ℓ from L down to 1.
		L := len(p.Stages) - 1
		var sequence []chainplan.Op
		for l := 1; l <= L; l++ {
			sequence = append(sequence, chainplan.Op{Kind: chainplan.FCk, Stage: l})
		}
		sequence = append(sequence, chainplan.Op{Kind: chainplan.FAll, Stage: L + 1}, chainplan.Op{Kind: chainplan.B, Stage: L + 1})
		for l := L; l >= 1; l-- {
			sequence = append(sequence, chainplan.Op{Kind: chainplan.FAll, Stage: l}, chainplan.Op{Kind: chainplan.B, Stage: l})
		}
		for k, frac := range []int64{2, 4} {
			plan := &chainplan.Plan{Algo: []string{"rotor", "sequential"}[(i+k)%2], Feasible: true,
				BudgetBytes: saved / frac, PeakBytes: saved/frac - int64(i%7)*1024, Slots: 500,
				Makespan: 0.02 * float64(1+k), SolveMS: 3.5, Sequence: sequence}
			id, err := db.RecordPlan(ctx, res.RunID, plan, map[string]any{"slots": 500}, "test")
			if err != nil {
				tb.Fatal(err)
			}
			if i%4 == 3 {
				continue
			}
			// Every fifth execution goes over its budget.
			peak := plan.PeakBytes
			if (i+k)%5 == 0 {
				peak = plan.BudgetBytes + 1<<20
			}
			e := store.Execution{PlanID: id, CreatedAt: p.Run.CreatedAt.Add(time.Hour), Steps: 20, StepTimeS: plan.Makespan * (1.05 + 0.01*float64(i%10)),
				PeakBytes: peak, TorchVersion: p.Run.TorchVersion, Device: p.Run.Device, Host: p.Run.Host}
			if _, err := db.RecordExecution(ctx, &e); err != nil {
				tb.Fatal(err)
			}
		}
	}
}

// example is one example query of docs/sql.md.
type example struct {
	title string
	sql   string
}

var (
	exampleHeading = regexp.MustCompile(`(?m)^### (\d+)\. (.+)$`)
	sqlBlock       = regexp.MustCompile("(?s)```sql\n(.*?)```")
)

// examples reads the numbered example queries of docs/sql.md: each "### N. Title" heading
// of the "Example queries" section followed by one sql code block.
func examples(tb testing.TB) []example {
	tb.Helper()
	doc, err := os.ReadFile("../docs/sql.md")
	if err != nil {
		tb.Fatal(err)
	}
	text := string(doc)
	start := strings.Index(text, "## Example queries")
	if start < 0 {
		tb.Fatal("docs/sql.md has no \"## Example queries\" section")
	}
	text = text[start:]
	if end := strings.Index(text[3:], "\n## "); end >= 0 {
		text = text[:end+3]
	}
	heads := exampleHeading.FindAllStringSubmatchIndex(text, -1)
	var out []example
	for i, h := range heads {
		end := len(text)
		if i+1 < len(heads) {
			end = heads[i+1][0]
		}
		blocks := sqlBlock.FindAllStringSubmatch(text[h[1]:end], -1)
		if len(blocks) != 1 {
			tb.Fatalf("example %q has %d sql blocks, want 1", text[h[4]:h[5]], len(blocks))
		}
		out = append(out, example{title: text[h[4]:h[5]], sql: blocks[0][1]})
	}
	return out
}

// sqlBlocks returns every sql code block of docs/sql.md, the examples and the others.
func sqlBlocks(tb testing.TB) []string {
	tb.Helper()
	doc, err := os.ReadFile("../docs/sql.md")
	if err != nil {
		tb.Fatal(err)
	}
	var out []string
	for _, m := range sqlBlock.FindAllStringSubmatch(string(doc), -1) {
		out = append(out, m[1])
	}
	return out
}

// TestExampleQueries runs every query of docs/sql.md unchanged on the same small history
// in every backend: each must run on the read-only path, each of the ten examples must
// return rows, and the backends must return the same rows.
func TestExampleQueries(t *testing.T) {
	exs := examples(t)
	if got, want := len(exs), 10; got != want {
		t.Fatalf("docs/sql.md has %d example queries, want %d", got, want)
	}
	var names []string
	var dbs []*store.DB
	for _, b := range selectedBackends() {
		db := b.open(t)
		buildHistory(t, db, 120, 3)
		for i, q := range sqlBlocks(t) {
			if _, _, err := queryAll(context.Background(), db, q); err != nil {
				t.Errorf("%s: sql block %d of docs/sql.md: %v\n%s", b.name, i+1, err, q)
			}
		}
		names, dbs = append(names, b.name), append(dbs, db)
	}
	for _, ex := range exs {
		t.Run(ex.title, func(t *testing.T) {
			var first [][]any
			for i, db := range dbs {
				cols, rows, err := queryAll(context.Background(), db, ex.sql)
				if err != nil {
					t.Fatalf("%s: %v\n%s", names[i], err, ex.sql)
				}
				if len(rows) == 0 {
					t.Fatalf("%s: no rows\n%s", names[i], ex.sql)
				}
				if i == 0 {
					first = rows
					t.Logf("%v: %d rows, first %v", cols, len(rows), rows[0])
					continue
				}
				if msg := sameRows(first, rows); msg != "" {
					t.Errorf("%s and %s differ: %s\n%s", names[0], names[i], msg, ex.sql)
				}
			}
		})
	}
}

// sameRows compares two results value by value: numbers as float64 to a relative 1e-9
// (the backends sum floats in different orders), everything else exactly. It returns ""
// when they agree, else the first difference.
func sameRows(a, b [][]any) string {
	if len(a) != len(b) {
		return fmt.Sprintf("%d rows against %d", len(a), len(b))
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return fmt.Sprintf("row %d: %d values against %d", i, len(a[i]), len(b[i]))
		}
		for j := range a[i] {
			x, xNum := number(a[i][j])
			y, yNum := number(b[i][j])
			switch {
			case xNum && yNum:
				if math.Abs(x-y) > 1e-9*math.Max(math.Abs(x), math.Abs(y)) {
					return fmt.Sprintf("row %d column %d: %v against %v", i, j, a[i][j], b[i][j])
				}
			case fmt.Sprint(a[i][j]) != fmt.Sprint(b[i][j]):
				return fmt.Sprintf("row %d column %d: %#v against %#v", i, j, a[i][j], b[i][j])
			}
		}
	}
	return ""
}

func number(v any) (float64, bool) {
	switch v := v.(type) {
	case int64:
		return float64(v), true
	case float64:
		return v, true
	}
	return 0, false
}
