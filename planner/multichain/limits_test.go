package multichain

import (
	"errors"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/testchains"
)

// bundleOf joins towers of the given lengths (testchains.Long) at a small loss.
func bundleOf(lengths ...int) *chainplan.MultiChain {
	mc := &chainplan.MultiChain{Format: chainplan.MultiChainFormat, Loss: chainplan.Loss{FwdTime: 1e-4, BwdTime: 1e-4}}
	for _, l := range lengths {
		c := testchains.Long(l)
		c.Loss = chainplan.Loss{}
		mc.Branches = append(mc.Branches, *c)
	}
	return mc
}

// TestLongTowersRefused: towers of 20 000 stages each (the 40 000 stages of issue 33 in
// two) are refused by every method with a *chainplan.SizeError naming the towers' length
// and the limit, before any table is allocated: H0's table of 4·10⁸ states per slot,
// H1's rotor tables on the 40 000-stage concatenation. The frontier too.
func TestLongTowersRefused(t *testing.T) {
	mc := bundleOf(20_000, 20_000)
	budget := storeAllPeak(mc) / 2
	for _, tt := range []struct {
		name string
		run  func() error
		want []string
	}{
		{"dp", func() error { _, err := Solve(mc, budget, Options{Method: DP}); return err },
			[]string{"multichain: a chain of 40000 stages is too large", "towers of 20000+20000 stages", "cells, over multichain's limit of 1.2e+07"}},
		{"linear", func() error { _, err := Solve(mc, budget, Options{Method: Linear}); return err },
			[]string{"multichain-linear, order [1 2]: rotor: a chain of 40000 stages is too large", "CHAINPLAN_TABLE_LIMIT"}},
		{"best", func() error { _, err := Solve(mc, budget, Options{}); return err },
			[]string{"rotor: a chain of 40000 stages is too large"}},
		{"linear min budget", func() error { _, err := MinBudget(mc, Options{Method: Linear}); return err },
			[]string{"a chain of 40000 stages is too large"}},
		{"frontier", func() error { _, err := SolveFrontier(mc); return err },
			[]string{"multichain: a chain of 40000 stages is too large", "merge consecutive stages"}},
	} {
		var err error
		n := testchains.Allocated(func() { err = tt.run() })
		var se *chainplan.SizeError
		if !errors.As(err, &se) || !errors.Is(err, chainplan.ErrUnsupported) {
			t.Fatalf("%s: %v, want a *chainplan.SizeError", tt.name, err)
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", tt.name, err, w)
			}
		}
		if n > testchains.MaxAllocBytes {
			t.Errorf("%s: allocated %d bytes before refusing", tt.name, n)
		}
	}
}

// TestOneLongTowerRefused: one tower of 3000 stages keeps H0's table under its limit of
// cells (3001 states × 3003 slots), but its adjoint chain would take 150 GiB and its fill
// 4·10¹³ steps: refused, where the DP used to allocate it.
func TestOneLongTowerRefused(t *testing.T) {
	mc := bundleOf(3000)
	err := checkTables(instanceOf(mc), 3002)
	var se *chainplan.SizeError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "multichain: a chain of 3000 stages is too large") ||
		!strings.Contains(err.Error(), "over multichain's limit of 2e+10") {
		t.Fatalf("one tower of 3000 stages: %v", err)
	}
	var refused error
	n := testchains.Allocated(func() { _, refused = Solve(mc, storeAllPeak(mc)-1, Options{Method: DP}) })
	if !errors.As(refused, &se) || n > testchains.MaxAllocBytes {
		t.Fatalf("Solve: %v after %d bytes", refused, n)
	}
}
