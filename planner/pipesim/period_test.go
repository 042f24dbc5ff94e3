package pipesim_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/chainplan/chainplan/planner/pipesim"
)

// TestPeriodSteadyStateDoesNotDependOnK: a steady state that repeats every 3 mini-batches
// (TiMePReSt with 3 in flight on unequal stages) gives one period whatever the number of
// mini-batches simulated, the mean over whole repetitions; the second half's mean, which
// the period was before, differs at K = 32 (16 spacings, not a multiple of 3).
func TestPeriodSteadyStateDoesNotDependOnK(t *testing.T) {
	su := mustSetup(t, []float64{1, 2, 1.5, 1}, []float64{2, 3, 2, 2}, nil, 0, pipesim.SetupOptions{})
	var periods []float64
	for _, k := range []int{12, 13, 32} {
		r := mustSimulate(t, su, pipesim.Options{Schedule: pipesim.TiMePReSt, Microbatches: 4, Minibatches: k, MaxInflight: 3})
		if !r.Steady || r.Cycle != 3 || r.PeriodTo != k || (r.PeriodTo-r.PeriodFrom)%3 != 0 {
			t.Fatalf("K = %d: steady %v, cycle %d, over %d..%d; want a steady state repeating every 3", k, r.Steady, r.Cycle,
				r.PeriodFrom, r.PeriodTo)
		}
		for _, w := range r.Warnings {
			if strings.Contains(w, "steady state") && !strings.Contains(w, "v = ") {
				t.Errorf("K = %d: a steady run warns %q", k, w)
			}
		}
		periods = append(periods, r.Period)
	}
	for _, p := range periods[1:] {
		if math.Abs(p-periods[0]) > 1e-9*periods[0] {
			t.Fatalf("periods %v at K = 12, 13, 32: want one steady-state period", periods)
		}
	}
}

// TestPeriodShortRunSaysSo: two mini-batches of an asynchronous schedule show no steady
// state; the result says so and the warning says why the period changes with K. A schedule
// with a flush is steady from its first mini-batch, and says nothing.
func TestPeriodShortRunSaysSo(t *testing.T) {
	su := mustSetup(t, []float64{1, 2, 1.5, 1}, []float64{2, 3, 2, 2}, nil, 0, pipesim.SetupOptions{})
	short := mustSimulate(t, su, pipesim.Options{Schedule: pipesim.PipeDreamAsync, Microbatches: 4, Minibatches: 2})
	long := mustSimulate(t, su, pipesim.Options{Schedule: pipesim.PipeDreamAsync, Microbatches: 4, Minibatches: 12})
	if short.Steady || !long.Steady || short.Period == long.Period {
		t.Fatalf("steady %v at K = 2 (period %v), %v at K = 12 (period %v)", short.Steady, short.Period, long.Steady, long.Period)
	}
	if !slices.ContainsFunc(short.Warnings, func(w string) bool {
		return strings.Contains(w, "no steady state seen within 2 mini-batches") &&
			strings.Contains(w, "changes with the number of mini-batches simulated") && strings.Contains(w, "simulate at least 8")
	}) {
		t.Errorf("K = 2: warnings %q", short.Warnings)
	}
	for _, s := range []pipesim.Schedule{pipesim.GPipe, pipesim.OneFOneBFlush} {
		for _, k := range []int{1, 2} {
			r := mustSimulate(t, su, pipesim.Options{Schedule: s, Microbatches: 4, Minibatches: k})
			if !r.Steady || r.Cycle != 1 || len(r.Warnings) != 0 {
				t.Errorf("%s K = %d: steady %v, cycle %d, warnings %q", s, k, r.Steady, r.Cycle, r.Warnings)
			}
		}
	}
}

// TestPeriodPileUpSaysItDependsOnK: TiMePReSt without a cap in front of a slower stage has
// no steady state; the warning gives the rates with their unit and says that the period
// changes with the number of mini-batches.
func TestPeriodPileUpSaysItDependsOnK(t *testing.T) {
	su := mustSetup(t, []float64{1, 2, 1.5, 1}, []float64{2, 3, 2, 2}, nil, 0, pipesim.SetupOptions{})
	r := mustSimulate(t, su, pipesim.Options{Schedule: pipesim.TiMePReSt, Microbatches: 4, Minibatches: 32})
	if r.Steady || !slices.ContainsFunc(r.Warnings, func(w string) bool {
		return strings.HasPrefix(w, "no steady state: the first stage starts a mini-batch every 6.5 s but one leaves every 20 s") &&
			strings.Contains(w, "over mini-batches 16..32, and changes with the number of mini-batches simulated")
	}) {
		t.Fatalf("steady %v, warnings %q", r.Steady, r.Warnings)
	}
}

// TestStaleWeightsWarning: v > 1 is explained: with several sequences of updates, which
// mini-batches form them; with one, that the weights are stale but the sequence is one
// (never "1 independent sequences").
func TestStaleWeightsWarning(t *testing.T) {
	stale := func(f, b []float64, n int) (*pipesim.Result, string) {
		su := mustSetup(t, f, b, nil, 0, pipesim.SetupOptions{})
		r := mustSimulate(t, su, pipesim.Options{Schedule: pipesim.TiMePReSt, Microbatches: n, Minibatches: 32})
		for _, w := range r.Warnings {
			if strings.Contains(w, "v = ") && strings.Contains(w, "the one just before") {
				return r, w
			}
		}
		t.Fatalf("no warning on v = %d: %q", r.VersionDifference, r.Warnings)
		return nil, ""
	}
	r, w := stale([]float64{2, 1, 1}, []float64{3, 2, 2}, 2)
	if r.Chains != 1 || !strings.HasPrefix(w, "stale weights: ") || !strings.Contains(w, "the updates still form one sequence") ||
		strings.Contains(w, "independent sequences") {
		t.Errorf("v = %d, %d sequence: %q", r.VersionDifference, r.Chains, w)
	}
	r, w = stale([]float64{1, 2, 1.5}, []float64{2, 3, 2}, 1)
	if r.Chains != 2 || !strings.HasPrefix(w, "multiple-sequence problem: ") ||
		!strings.Contains(w, "split into 2 independent sequences of mini-batches (16, 18, 20, ... and 17, 19, 21, ...)") ||
		!strings.Contains(w, "about 1/2 of the data") {
		t.Errorf("v = %d, %d sequences: %q", r.VersionDifference, r.Chains, w)
	}
}
