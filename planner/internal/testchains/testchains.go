// Package testchains holds the chains every planner's tests iterate over: the test vectors
// of the specs with their known optima, and seeded random chains for property tests.
package testchains

import (
	"fmt"
	"math/rand/v2"

	"github.com/chainplan/chainplan"
)

// Inf marks an infeasible budget in a table of expected makespans.
const Inf = -1

// Case is a chain with the optimal makespan at several total budgets (bytes, a_0 included,
// sizes exact: run with slots == budget so that the unit is 1).
type Case struct {
	Name  string
	Chain *chainplan.Chain
	// Want maps a budget to the optimal persistent makespan (Inf when infeasible).
	Want map[int64]float64
	// WantFloating maps a budget to the optimal makespan without the persistence
	// restriction, where it differs from Want; missing budgets mean "same as Want".
	WantFloating map[int64]float64
}

// stage builds a stage from the spec's symbols.
func stage(name string, uF, uB float64, a, abar, oF, oB int64) chainplan.Stage {
	return chainplan.Stage{Name: name, FwdTime: uF, BwdTime: uB, OutBytes: a, SavedBytes: abar, FwdTmpBytes: oF, BwdTmpBytes: oB}
}

// ExampleA is the small heterogeneous test vector of rotor spec §4.7: L = 3 plus the loss.
func ExampleA() Case {
	c := &chainplan.Chain{
		Format:     chainplan.ChainFormat,
		InputBytes: 2,
		Stages: []chainplan.Stage{
			stage("s1", 2, 3, 4, 6, 1, 1),
			stage("s2", 3, 4, 3, 8, 0, 1),
			stage("s3", 1, 2, 5, 7, 2, 0),
		},
		Loss: chainplan.Loss{FwdTime: 0, BwdTime: 1, FwdTmpBytes: 0, BwdTmpBytes: 1},
	}
	// rotor spec §4.7, table "persistent = floating = exhaustive".
	want := map[int64]float64{20: Inf, 21: Inf, 22: 23, 23: 23, 24: 21, 25: 21, 26: 19, 27: 19, 28: 19,
		29: 18, 30: 18, 31: 16, 32: 16, 40: 16}
	return Case{Name: "ExampleA", Chain: c, Want: want}
}

// Counterexample is the instance of rotor spec §3.5 (thesis Fig. 2.3) for n ≥ 3, at its
// budget of 15: persistence costs 3n−2, the unrestricted optimum is min(3n−2, 2n+2).
func Counterexample(n int) Case {
	l := n + 2
	c := &chainplan.Chain{Format: chainplan.ChainFormat, InputBytes: 0}
	for i := 1; i <= l; i++ {
		var uF float64
		switch i {
		case 1:
			uF = float64(n - 2)
		case 2:
			uF = 2
		}
		a := int64(3)
		switch i {
		case 1:
			a = 1
		case l:
			a = 4
		}
		c.Stages = append(c.Stages, stage(fmt.Sprintf("s%d", i), uF, 0, a, a, 0, 0))
	}
	persistent := float64(3*n - 2)
	floating := min(persistent, float64(2*n+2))
	return Case{
		Name:         fmt.Sprintf("Counterexample/n=%d", n),
		Chain:        c,
		Want:         map[int64]float64{15: persistent},
		WantFloating: map[int64]float64{15: floating},
	}
}

// Partition is the 2-Partition reduction of rotor spec §3.6 (thesis Theorem 4) with u_B = 1:
// at budget 3V the optimum is 4V+U_B exactly when x splits into two halves of sum V.
// want is the spec's value at that budget.
func Partition(x []int64, want float64) Case {
	var sum int64
	for _, v := range x {
		sum += v
	}
	v := sum / 2
	n := len(x)
	c := &chainplan.Chain{Format: chainplan.ChainFormat, InputBytes: 0}
	// Stages 1..2n+1; stage 2n+2 is the loss.
	for i := 1; i <= 2*n+1; i++ {
		var uF float64
		var a int64
		switch {
		case i == 2*n+1:
			uF, a = float64(v), v
		case i%2 == 1:
			uF, a = float64(x[i/2]), x[i/2]
		}
		c.Stages = append(c.Stages, stage(fmt.Sprintf("s%d", i), uF, 1, a, a, 0, 0))
	}
	c.Loss = chainplan.Loss{BwdTime: 1}
	return Case{Name: fmt.Sprintf("Partition/%v", x), Chain: c, Want: map[int64]float64{3 * v: want}}
}

// PartitionCases are the instances of the table in rotor spec §3.6.
func PartitionCases() []Case {
	return []Case{
		Partition([]int64{1, 2, 3, 4}, 30),
		Partition([]int64{3, 1, 1, 1}, 22),
		Partition([]int64{5, 3, 2, 2, 2}, 40),
		Partition([]int64{2, 4, 6}, 32),
		Partition([]int64{1, 1, 4}, 22),
		Partition([]int64{2, 2, 2}, 21),
		Partition([]int64{7, 1, 1, 1}, 32),
	}
}

// Cases returns every fixed case.
func Cases() []Case {
	cases := []Case{ExampleA()}
	for n := 3; n <= 8; n++ {
		cases = append(cases, Counterexample(n))
	}
	return append(cases, PartitionCases()...)
}

// RandomOptions bounds the values of a random chain.
type RandomOptions struct {
	MaxSize     int64 // sizes are in 0..MaxSize (saved ≥ out); default 10
	MaxTime     int   // times are integers in 0..MaxTime; default 5
	MaxOverhead int64 // overheads are in 0..MaxOverhead; default 3
	Float       bool  // draw fractional times instead of integers
	// Exact draws the exact memory model of each stage (chainplan.chain/v2): whether it
	// saves its input and its output, and a recomputation time at most its forward time.
	Exact bool
	// Options draws up to this many operation-level options per stage (with Exact): ā
	// between a and the stage's ā, overheads as the stage's, recomputation at most u_F.
	Options int
}

// Random returns a chain of l stages plus a loss drawn from rng. Times are integers unless
// opts.Float is set, so sums are exact and makespans can be compared with ==.
func Random(rng *rand.Rand, l int, opts RandomOptions) *chainplan.Chain {
	if opts.MaxSize <= 0 {
		opts.MaxSize = 10
	}
	if opts.MaxTime <= 0 {
		opts.MaxTime = 5
	}
	if opts.MaxOverhead < 0 {
		opts.MaxOverhead = 0
	} else if opts.MaxOverhead == 0 {
		opts.MaxOverhead = 3
	}
	t := func() float64 {
		if opts.Float {
			return rng.Float64() * float64(opts.MaxTime)
		}
		return float64(rng.IntN(opts.MaxTime + 1))
	}
	sz := func(max int64) int64 { return rng.Int64N(max + 1) }
	c := &chainplan.Chain{Format: chainplan.ChainFormat, InputBytes: 1 + sz(opts.MaxSize-1)}
	for i := 1; i <= l; i++ {
		a := 1 + sz(opts.MaxSize-1)
		abar := a + sz(opts.MaxSize-a)
		c.Stages = append(c.Stages, stage(fmt.Sprintf("s%d", i), t(), t(), a, abar, sz(opts.MaxOverhead), sz(opts.MaxOverhead)))
	}
	c.Loss = chainplan.Loss{FwdTime: t(), BwdTime: t(), FwdTmpBytes: sz(opts.MaxOverhead), BwdTmpBytes: sz(opts.MaxOverhead)}
	if opts.Exact {
		for i := range c.Stages {
			addExact(rng, &c.Stages[i], opts, sz)
		}
	}
	return c
}

// addExact draws the version 2 fields of a stage (RandomOptions.Exact).
func addExact(rng *rand.Rand, s *chainplan.Stage, opts RandomOptions, sz func(int64) int64) {
	below := func(u float64) float64 { // a recomputation time in 0..u
		if opts.Float {
			return rng.Float64() * u
		}
		return float64(rng.IntN(int(u) + 1))
	}
	s.SavesInput = chainplan.Bool(rng.IntN(2) == 0)
	s.SavesOutput = chainplan.Bool(rng.IntN(2) == 0)
	s.RecomputeTime = chainplan.Float(below(s.FwdTime))
	if rng.IntN(2) == 0 {
		s.RecomputeTmpBytes = chainplan.Int(sz(opts.MaxOverhead))
	}
	for j := range rng.IntN(opts.Options + 1) {
		saved := s.OutBytes + sz(s.SavedBytes-s.OutBytes)
		s.Options = append(s.Options, chainplan.StageOption{SavedBytes: saved, FwdTmpBytes: sz(opts.MaxOverhead),
			RecomputeTime: below(s.FwdTime), Keep: []int{j}})
	}
}
