package planner_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner"
)

// pofoExample is the worked example of pofo spec §5.8.
func pofoExample() *chainplan.Chain {
	st := func(uF, uB float64, a, abar, o int64) chainplan.Stage {
		return chainplan.Stage{FwdTime: uF, BwdTime: uB, OutBytes: a, SavedBytes: abar, FwdTmpBytes: o, BwdTmpBytes: o}
	}
	return &chainplan.Chain{Format: chainplan.ChainFormat, InputBytes: 2,
		Stages: []chainplan.Stage{st(1, 2, 4, 6, 1), st(2, 4, 2, 3, 0), st(1, 2, 4, 7, 1), st(2, 4, 1, 2, 0)},
		Loss:   chainplan.Loss{FwdTime: 0.5, BwdTime: 0.5}}
}

// TestSolveOffloadRequests checks the bandwidth rules of Request and the dispatch to the
// offloading planners.
func TestSolveOffloadRequests(t *testing.T) {
	c := pofoExample()
	tests := []struct {
		name    string
		req     planner.Request
		want    string // algorithm of the plan, or the error text
		wantErr error
	}{
		{"Pofo", planner.Request{Algo: "pofo", BudgetBytes: 22, Slots: 22, Bandwidth: 1}, "pofo", nil},
		{"Offload", planner.Request{Algo: "offload", BudgetBytes: 22, Slots: 22, Bandwidth: 1}, "offload", nil},
		{"Greedy", planner.Request{Algo: "greedy", BudgetBytes: 24, Bandwidth: 1}, "greedy", nil},
		{"AutoCapper", planner.Request{Algo: "autocapper", BudgetBytes: 22, Bandwidth: 1}, "autocapper", nil},
		{"Opportunist", planner.Request{Algo: "opportunist", BudgetBytes: 22, Bandwidth: 1}, "opportunist", nil},
		{"NoBandwidth", planner.Request{Algo: "pofo", BudgetBytes: 22}, "needs a bandwidth", chainplan.ErrUnsupported},
		{"NegativeBandwidth", planner.Request{Algo: "offload", BudgetBytes: 22, Bandwidth: -1}, "positive, finite", chainplan.ErrUnsupported},
		{"NaNBandwidth", planner.Request{Algo: "pofo", BudgetBytes: 22, Bandwidth: math.NaN()}, "positive, finite", chainplan.ErrUnsupported},
		{"InfiniteBandwidth", planner.Request{Algo: "pofo", BudgetBytes: 22, Bandwidth: math.Inf(1)}, "positive, finite", chainplan.ErrUnsupported},
		{"BandwidthForRotor", planner.Request{Algo: "rotor", BudgetBytes: 22, Bandwidth: 1}, "offloading algorithms only", chainplan.ErrUnsupported},
		{"Infeasible", planner.Request{Algo: "pofo", BudgetBytes: 15, Slots: 15, Bandwidth: 1}, "smallest feasible budget", chainplan.ErrInfeasible},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := planner.Solve(c, tt.req)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("Solve error %v, want %v mentioning %q", err, tt.wantErr, tt.want)
				}
				return
			}
			if err != nil || p.Algo != tt.want || p.Offload == nil || p.PeakBytes > tt.req.BudgetBytes {
				t.Fatalf("Solve=%+v, %v", p, err)
			}
		})
	}
	// MinBudget of pofo at β = 1 in exact bytes: 16 (spec §5.8).
	if got, err := planner.MinBudget(c, planner.Request{Algo: "pofo", Slots: 1 << 20, Bandwidth: 1}); err != nil || got != 16 {
		t.Fatalf("MinBudget(pofo)=%d, %v; want 16", got, err)
	}
}
