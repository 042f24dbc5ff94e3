package pybind

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/rotor"
)

// TestFrontier checks the frontier of rotor spec §4.7's chain against the other entry
// points: it starts at MinBudget, each point is what Solve finds at its budget (the
// default 500 slots exceed the chain's peak, so every unit is one byte and all of them
// agree exactly), and it ends at the no-recomputation time.
func TestFrontier(t *testing.T) {
	for _, algo := range []string{"rotor", "revolve"} {
		out, err := Frontier(callOf(chainSource(exampleA(t)), `{"algo": "`+algo+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		var f rotor.Frontier
		if err := json.Unmarshal([]byte(out), &f); err != nil {
			t.Fatal(err)
		}
		if f.Algo != algo || f.Slots != rotor.DefaultSlots || f.UnitBytes != 1 || f.SumTime != 16 || len(f.Points) < 2 {
			t.Fatalf("%s: frontier %+v", algo, f)
		}
		req := `{"algo": "` + algo + `"}`
		if lo, err := MinBudget(callOf(chainSource(exampleA(t)), req)); err != nil || f.Points[0].BudgetBytes != lo {
			t.Fatalf("%s: frontier starts at %d, MinBudget = %d, %v", algo, f.Points[0].BudgetBytes, lo, err)
		}
		for k, pt := range f.Points {
			res, err := planChain(exampleA(t), fmt.Sprintf(`{"algo": %q, "budget_bytes": %d}`, algo, pt.BudgetBytes))
			if err != nil {
				t.Fatalf("%s point %d %+v: %v", algo, k, pt, err)
			}
			var p chainplan.Plan
			if err := json.Unmarshal([]byte(res), &p); err != nil || p.Makespan != pt.Makespan {
				t.Fatalf("%s point %d %+v: Plan makespan %v, %v", algo, k, pt, p.Makespan, err)
			}
			if k > 0 && pt.Makespan >= f.Points[k-1].Makespan {
				t.Fatalf("%s: makespan does not fall at point %d: %+v", algo, k, f.Points)
			}
		}
		if algo == "rotor" && f.Points[len(f.Points)-1].Makespan != f.SumTime {
			t.Fatalf("rotor frontier ends at %+v, want the no-recomputation time %v", f.Points[len(f.Points)-1], f.SumTime)
		}
	}
}

func TestFrontierErrors(t *testing.T) {
	tests := []struct {
		chain, req, prefix string
	}{
		{exampleA(t), `{"algo": "pofo"}`, `chainplan[bad-request]: unsupported request: no frontier for algorithm "pofo": only rotor, rotor-ops and revolve have one`},
		{exampleA(t), `{"budget_bytes": 30}`, `chainplan[bad-request]: bad request: frontier request: json: unknown field "budget_bytes"`},
		{exampleA(t), `{"slots": -1}`, `chainplan[bad-request]: unsupported request: slots must be positive`},
		{`{"format": "x"}`, `{}`, `chainplan[invalid-chain]: format x is not supported (this chainplan reads chainplan.chain/v1 or chainplan.chain/v2)`},
	}
	for _, tt := range tests {
		_, err := Frontier(callOf(chainSource(tt.chain), tt.req))
		if err == nil || !strings.HasPrefix(err.Error(), tt.prefix) {
			t.Errorf("Frontier(%s) error %v, want prefix %q", tt.req, err, tt.prefix)
		}
	}
}
