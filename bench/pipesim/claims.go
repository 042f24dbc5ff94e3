package main

import (
	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/contiguous"
	"github.com/chainplan/chainplan/planner/pipesim"
)

// claim sets TiMePReSt against PipeDream as the paper does (spec §4.8): two devices, the
// same mini-batch M. TiMePReSt splits it into N micro-batches (the profile's batch) and
// runs one backward of the whole mini-batch; PipeDream runs M at once, so its chain is the
// profile's scaled by N (times and activations; linear in the batch, spec §4.10 trap 1).
type claim struct {
	model string
	n     int
	// TiMePReSt without a cap (the paper's) and capped at two mini-batches in flight (as
	// many as PipeDream keeps on the first of two stages), and PipeDream.
	tp, capped, pd outcome
}

// capTwo is the cap of the capped TiMePReSt runs: PipeDream's mini-batches in flight on
// the first of two stages.
const capTwo = 2

// claimNs are the micro-batch counts of the comparison.
var claimNs = []int{2, 4, 8}

func timeprestClaims(name string, c *chainplan.Chain, k int) ([]*claim, error) {
	var out []*claim
	for _, n := range claimNs {
		pr, err := problem(c, 2, 0)
		if err != nil {
			return nil, err
		}
		stages := contiguous.Balanced(pr, 2)
		su, err := pipesim.NewSetup(pr, stages, pipesim.SetupOptions{Links: true})
		if err != nil {
			return nil, err
		}
		tp, err := pipesim.Simulate(su, pipesim.Options{Schedule: pipesim.TiMePReSt, Microbatches: n, Minibatches: k})
		if err != nil {
			return nil, err
		}
		capped, err := pipesim.Simulate(su, pipesim.Options{Schedule: pipesim.TiMePReSt, Microbatches: n, Minibatches: k, MaxInflight: capTwo})
		if err != nil {
			return nil, err
		}
		big, err := problem(scaled(c, n), 2, 0)
		if err != nil {
			return nil, err
		}
		bs, err := pipesim.NewSetup(big, stages, pipesim.SetupOptions{Links: true})
		if err != nil {
			return nil, err
		}
		pd, err := pipesim.Simulate(bs, pipesim.Options{Schedule: pipesim.PipeDreamAsync, Microbatches: 1, Minibatches: k})
		if err != nil {
			return nil, err
		}
		out = append(out, &claim{model: name, n: n, tp: summarise(tp), capped: summarise(capped), pd: summarise(pd)})
	}
	return out, nil
}

// scaled returns c measured at n times its batch: times and activation sizes multiplied by
// n, the weights unchanged.
func scaled(c *chainplan.Chain, n int) *chainplan.Chain {
	out := *c
	f := float64(n)
	out.InputBytes *= int64(n)
	out.Stages = make([]chainplan.Stage, len(c.Stages))
	for i, s := range c.Stages {
		s.FwdTime *= f
		s.BwdTime *= f
		s.OutBytes *= int64(n)
		s.SavedBytes *= int64(n)
		s.FwdTmpBytes *= int64(n)
		s.BwdTmpBytes *= int64(n)
		out.Stages[i] = s
	}
	out.Loss.FwdTime *= f
	out.Loss.BwdTime *= f
	return &out
}
