package planner_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner"
)

// TestRequestChecksAlgorithmFirst checks that a misspelt algorithm is reported as unknown,
// whatever else the request holds: a bandwidth or segments that would suit the intended
// algorithm must not turn it into a bandwidth or segments message.
func TestRequestChecksAlgorithmFirst(t *testing.T) {
	c := pofoExample()
	tests := []struct {
		name string
		req  planner.Request
		want string
	}{
		{"UpperCaseWithBandwidth", planner.Request{Algo: "POFO", BudgetBytes: 22, Bandwidth: 1e9},
			`unknown algorithm "POFO" (names are lower-case: did you mean "pofo"? want one of rotor,`},
		{"UpperCaseWithSegments", planner.Request{Algo: "Sequential", BudgetBytes: 22, Segments: 2},
			`did you mean "sequential"?`},
		{"MixedCase", planner.Request{Algo: "Rotor", BudgetBytes: 22}, `did you mean "rotor"?`},
		{"Misspelt", planner.Request{Algo: "pofoo", BudgetBytes: 22, Bandwidth: 1e9},
			`unknown algorithm "pofoo" (want one of`},
		{"NegativeSlots", planner.Request{Algo: "magic", BudgetBytes: 22, Slots: -1}, `unknown algorithm "magic"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for what, call := range map[string]func() error{
				"Solve":     func() error { _, err := planner.Solve(c, tt.req); return err },
				"MinBudget": func() error { _, err := planner.MinBudget(c, tt.req); return err },
			} {
				err := call()
				if !errors.Is(err, chainplan.ErrUnsupported) || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("%s error %v, want ErrUnsupported containing %q", what, err, tt.want)
				}
			}
		})
	}
}
