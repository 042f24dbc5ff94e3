package pybind

import (
	"errors"
	"fmt"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/service"
)

// TestInfeasibilityCoded codes every family's infeasibility that implements
// chainplan.Infeasibility with its smallest memory, wrapped or not, and a bare
// ErrInfeasible with 0.
func TestInfeasibilityCoded(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want string
	}{
		{&chainplan.InfeasibleError{Algo: "pofo", BudgetBytes: 10, MinBudgetBytes: 42}, "chainplan[infeasible;min_budget_bytes=42]: pofo: budget 10 B"},
		{fmt.Errorf("plan run 3: %w", &chainplan.InfeasibleError{Algo: "rotor", BudgetBytes: 1}), "chainplan[infeasible;min_budget_bytes=0]: plan run 3: rotor"},
		{&service.NoCandidateError{LeastBytes: 3 << 30, CapacityBytes: 1 << 30}, "chainplan[infeasible;min_budget_bytes=3221225472]: advise: no candidate"},
		{&service.NoCandidateError{LeastBytes: -1, Reason: "none applies"}, "chainplan[infeasible;min_budget_bytes=0]: advise: no candidate is feasible (none applies)"},
		{fmt.Errorf("floating DP: %w", chainplan.ErrInfeasible), "chainplan[infeasible;min_budget_bytes=0]: floating DP"},
	} {
		got := codedError(tt.err).Error()
		if len(got) < len(tt.want) || got[:len(tt.want)] != tt.want {
			t.Errorf("%v: coded %q, want the prefix %q", tt.err, got, tt.want)
		}
		if !errors.Is(tt.err, chainplan.ErrInfeasible) {
			t.Errorf("%v: not ErrInfeasible (the CLI's exit 3)", tt.err)
		}
	}
}
