// Command multichain compares, on the planner's model, the plans of towers joined at the
// loss: the multi-chain dynamic program (H0), rotor on the towers concatenated into one
// chain in the best order (H1, what planning the towers as one chain gives at best), and
// per-block checkpointing, for the tower shapes of the thesis's simulations (cross-modal
// towers of unequal depth, Siamese towers of equal depth) with uniform sizes, and for towers
// of random heterogeneous stages. For budgets M = (1−α)·M^min + α·M^peak it replays every
// plan in bytes and writes the makespans over the no-recomputation time, and the planning
// times, to docs/multichain-eval.md.
//
// Usage, from the repository root:
//
//	go run ./bench/multichain [-out docs]
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/bench/internal/machine"
	"github.com/chainplan/chainplan/planner/multichain"
	"github.com/chainplan/chainplan/planner/simulate"
)

var alphas = []float64{0, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9}

// family is one bundle to study.
type family struct {
	name, note string
	mc         *chainplan.MultiChain
}

// uniform is a bundle of towers of unit stages (a = ā = 1 MiB, u_F = 1, u_B = 2 ms).
func uniform(lens ...int) *chainplan.MultiChain {
	const mib = 1 << 20
	mc := &chainplan.MultiChain{Format: chainplan.MultiChainFormat, Loss: chainplan.Loss{FwdTime: 1e-3, BwdTime: 1e-3}}
	for _, l := range lens {
		c := chainplan.Chain{Format: chainplan.ChainFormat, InputBytes: mib}
		for range l {
			c.Stages = append(c.Stages, chainplan.Stage{FwdTime: 1e-3, BwdTime: 2e-3, OutBytes: mib, SavedBytes: mib})
		}
		mc.Branches = append(mc.Branches, c)
	}
	return mc
}

// random is a bundle of towers of random stages: activations of 1-64 MiB, saved tensors up
// to twice that, temporaries up to 8 MiB, times 0.5-5 ms (backward 1-3 times the forward);
// shared, when set, repeats the first tower (a Siamese network).
func random(seed uint64, shared bool, lens ...int) *chainplan.MultiChain {
	rng := rand.New(rand.NewPCG(seed, 24))
	const mib = 1 << 20
	mc := &chainplan.MultiChain{Format: chainplan.MultiChainFormat, Loss: chainplan.Loss{FwdTime: 1e-3, BwdTime: 1e-3,
		FwdTmpBytes: 4 * mib, BwdTmpBytes: 4 * mib}}
	for i, l := range lens {
		if shared && i > 0 {
			mc.Branches = append(mc.Branches, mc.Branches[0])
			continue
		}
		c := chainplan.Chain{Format: chainplan.ChainFormat, InputBytes: int64(1+rng.IntN(8)) * mib}
		for range l {
			a := int64(1+rng.IntN(64)) * mib
			f := 0.5e-3 + rng.Float64()*4.5e-3
			c.Stages = append(c.Stages, chainplan.Stage{FwdTime: f, BwdTime: f * (1 + 2*rng.Float64()), OutBytes: a,
				SavedBytes: a + rng.Int64N(a+1), FwdTmpBytes: rng.Int64N(8 * mib), BwdTmpBytes: rng.Int64N(8 * mib)})
		}
		mc.Branches = append(mc.Branches, c)
	}
	return mc
}

// result is one method at one budget.
type result struct {
	ok       bool
	makespan float64
	peak     int64
}

type row struct {
	alpha  float64
	budget int64
	dp     result
	linear result
	best   result
	chosen string
}

type study struct {
	family
	min, peak     int64
	perBlock      result
	rows          []row
	solveBest     time.Duration
	minDP, minLin int64
}

func solve(mc *chainplan.MultiChain, budget int64, m multichain.Method) (result, string) {
	p, err := multichain.Solve(mc, budget, multichain.Options{Method: m})
	if err != nil {
		return result{}, ""
	}
	return result{true, p.Makespan, p.PeakBytes}, p.Chosen
}

func run(f family) *study {
	st := &study{family: f}
	var err error
	if st.min, err = multichain.MinBudget(f.mc, multichain.Options{}); err != nil {
		panic(err)
	}
	st.minDP, _ = multichain.MinBudget(f.mc, multichain.Options{Method: multichain.DP})
	st.minLin, _ = multichain.MinBudget(f.mc, multichain.Options{Method: multichain.Linear})
	st.peak = simulate.RunMulti(f.mc, multichain.StoreAllSequence(f.mc), -1).Peak
	pb := simulate.RunMulti(f.mc, multichain.PerBlockSequence(f.mc), -1)
	st.perBlock = result{pb.Valid, pb.Makespan, pb.Peak}
	for _, a := range alphas {
		b := st.min + int64(a*float64(st.peak-st.min))
		r := row{alpha: a, budget: b}
		r.dp, _ = solve(f.mc, b, multichain.DP)
		r.linear, _ = solve(f.mc, b, multichain.Linear)
		start := time.Now()
		r.best, r.chosen = solve(f.mc, b, multichain.Best)
		st.solveBest = max(st.solveBest, time.Since(start))
		st.rows = append(st.rows, r)
	}
	return st
}

func main() {
	out := flag.String("out", "docs", "folder of the report")
	flag.Parse()
	fams := []family{
		{"CM uniform (4, 20)", "cross-modal towers of unequal depth, unit sizes (spec §7.3's CM, L = 4)", uniform(4, 20)},
		{"SNN uniform (8, 8, 8)", "three towers of equal depth, unit sizes (spec §7.3's SNN, L = 4)", uniform(8, 8, 8)},
		{"dual random (24, 12)", "image and text towers of random stages", random(1, false, 24, 12)},
		{"triplet random (16 ×3)", "one random tower on three inputs", random(2, true, 16, 16, 16)},
		{"three random (16, 16, 16)", "three different random towers", random(3, false, 16, 16, 16)},
	}
	var studies []*study
	for _, f := range fams {
		studies = append(studies, run(f))
	}
	if err := os.WriteFile(filepath.Join(*out, "multichain-eval.md"), []byte(report(studies)), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func report(studies []*study) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("# Multi-chain plans on the planner's model\n\n")
	p("Generated by `go run ./bench/multichain` on %s, %s. Do not edit by hand.\n\n", machine.Describe(),
		time.Now().UTC().Format("2006-01-02"))
	p("Budgets M = (1−α)·M^min + α·M^peak, M^min the smallest budget of `multichain` and M^peak the peak without ")
	p("recomputation. Each cell is the makespan over the no-recomputation time Σ(u_F+u_B), replayed in bytes by ")
	p("the multi-branch simulator; \"—\" means no plan fits. **dp** is H0 (the multi-chain DP on slots of the largest ")
	p("activation), **one chain** is H1 (rotor on the towers concatenated, in the best of every order: what planning ")
	p("the towers as one chain gives at best), **multichain** the faster of the two and no recomputation. The last ")
	p("column is one chain over multichain: how much slower planning the towers as one chain is.\n\n")
	for _, st := range studies {
		p("## %s\n\n%s. M^min %s (dp alone %s, one chain alone %s), M^peak %s; per-block checkpointing (every ",
			st.name, st.note, chainplan.FormatBytes(st.min), chainplan.FormatBytes(st.minDP), chainplan.FormatBytes(st.minLin),
			chainplan.FormatBytes(st.peak))
		p("stage's input kept, each stage recomputed once) peaks at %s with makespan %.3f. Slowest `multichain` solve: %s.\n\n",
			chainplan.FormatBytes(st.perBlock.peak), st.perBlock.makespan/st.mc.SumTime(), st.solveBest.Round(time.Millisecond))
		p("| α | budget | dp | one chain | multichain (chose) | one chain / multichain |\n|---|---|---|---|---|---|\n")
		for _, r := range st.rows {
			cell := func(x result) string {
				if !x.ok {
					return "—"
				}
				return fmt.Sprintf("%.3f", x.makespan/st.mc.SumTime())
			}
			ratio := "—"
			if r.linear.ok && r.best.ok {
				ratio = fmt.Sprintf("%.3f", r.linear.makespan/r.best.makespan)
			} else if r.best.ok {
				ratio = "∞ (no plan)"
			}
			p("| %.1f | %s | %s | %s | %s (%s) | %s |\n", r.alpha, chainplan.FormatBytes(r.budget), cell(r.dp), cell(r.linear),
				cell(r.best), r.chosen, ratio)
		}
		p("\n")
	}
	return b.String()
}
