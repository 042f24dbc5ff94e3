package service

import (
	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner"
	"github.com/chainplan/chainplan/profilearrow"
)

// PlanProfile plans profile p (read from a file, not stored) as PlanRun plans a stored
// run: its chain, or the bundle of a profile of towers joined at the loss; an empty
// req.Algo plans with the profile's default algorithm. Nothing is recorded. Errors: the
// profile's (a *chainplan.ChainError for sizes that were not measured) and the planner's.
func PlanProfile(p *profilearrow.Profile, req Request) (*Planned, error) {
	got := &Planned{InputShape: p.Meta.InputShape}
	tw, err := p.Meta.Towers()
	if err != nil {
		return nil, err
	}
	if tw != nil {
		if req.Algo == "" {
			req.Algo = planner.DefaultMultichainAlgo
		}
		if got.MultiChain, err = p.MultiChain(); err != nil {
			return nil, err
		}
		if got.Plan, err = SolveMultichain(got.MultiChain, req); err != nil {
			return nil, err
		}
		got.Algo = req.Algo
		return got, nil
	}
	c, err := p.Chain()
	if err != nil {
		return nil, err
	}
	planned, err := PlanChain(c, req)
	if err != nil {
		return nil, err
	}
	planned.InputShape = got.InputShape
	return planned, nil
}

// PlanChain plans chain c as Solve does, with the chain's default algorithm when
// req.Algo is empty (planner.DefaultAlgo). Nothing is recorded.
func PlanChain(c *chainplan.Chain, req Request) (*Planned, error) {
	if req.Algo == "" {
		req.Algo = planner.DefaultAlgo(c)
	}
	p, err := Solve(c, req)
	if err != nil {
		return nil, err
	}
	return &Planned{Chain: c, Plan: p, Algo: req.Algo}, nil
}
