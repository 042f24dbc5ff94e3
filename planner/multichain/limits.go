package multichain

import (
	"fmt"
	"strings"

	"github.com/chainplan/chainplan"
)

// The dynamic program's limits (docs/multichain.md, "Limits"), checked before its tables
// are allocated. Its table has a cell per state R (Π_j (L_j+1) of them) and slot count,
// each computed over ΣL_j decisions, and each tower's adjoint chain a cell per (p, ℓ) and
// slot count, each over ℓ choices: the time grows as a product of the towers' lengths, or
// as the fourth power of one tower's. Three limits hold:
//
//   - maxCells on the main table's cells: K = 3 towers of 40 stages at their store-all slots
//     are 8.8·10⁶ cells, 100 MiB (spec §10.15: merge consecutive stages first beyond);
//   - maxSteps on the time, the cells times their decisions over both tables, about a
//     minute on the 2-core reference machine;
//   - chainplan.TableLimit on the memory of both.
//
// A refused request is a *chainplan.SizeError; with algorithm "multichain" the other
// candidates (H1, no recomputation) are still tried.
const (
	maxCells = 12_000_000
	maxSteps = 2e10
)

// tableSize returns the cells of the main table at muMax slots, the memory of both tables
// (the main table's value, argmin branch and step, 11 bytes a cell; the adjoint chains'
// value and choice, 12) and the steps of filling them, in floating point so that no
// product overflows.
func tableSize(in *instance, muMax int) (cells, bytes, steps float64) {
	states := 1.0
	for _, l := range in.L {
		states *= float64(l + 1)
	}
	cells = states * float64(muMax+1)
	bytes = cells * 11
	steps = cells * float64(in.sumL())
	for _, l := range in.L {
		rows := float64(l) * float64(l+1) / 2
		cols := float64(max(0, min(muMax, l+1)) + 1)
		bytes += rows * cols * 12
		steps += rows * cols * float64(l)
	}
	return cells, bytes, steps
}

// checkTables refuses the dynamic program for in at muMax slots when its tables pass
// maxCells, maxSteps or chainplan.TableLimit.
func checkTables(in *instance, muMax int) error {
	cells, bytes, steps := tableSize(in, muMax)
	what := fmt.Sprintf("the multi-chain DP for towers of %s stages at %d slots", lengths(in.L), muMax+1)
	fix := "merge consecutive stages of the towers into blocks, or use --algo multichain-linear (rotor on the towers concatenated)"
	switch {
	case cells > maxCells:
		return &chainplan.SizeError{Algo: "multichain", Stages: in.sumL(), What: what + "'s table",
			NeedSteps: cells, LimitSteps: maxCells, Unit: "cells", Fix: fix}
	case steps > maxSteps:
		return &chainplan.SizeError{Algo: "multichain", Stages: in.sumL(), What: what, NeedSteps: steps,
			LimitSteps: maxSteps, Fix: fix}
	}
	return chainplan.CheckTables("multichain", in.sumL(), what+"'s tables", bytes, func(int64) string { return fix })
}

// lengths writes the towers' lengths as "40+40+12".
func lengths(l []int) string {
	s := make([]string, len(l))
	for i, n := range l {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, "+")
}
