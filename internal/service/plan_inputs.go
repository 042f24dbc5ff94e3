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
		mc, err := p.MultiChain()
		if err != nil {
			return nil, err
		}
		planned, err := PlanMultiChain(mc, req)
		if err != nil {
			return nil, err
		}
		planned.InputShape = got.InputShape
		return planned, nil
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

// PlanMultiChain plans bundle mc (towers joined at the loss) as SolveMultichain does, with
// planner.DefaultMultichainAlgo when req.Algo is empty. Nothing is recorded.
func PlanMultiChain(mc *chainplan.MultiChain, req Request) (*Planned, error) {
	if req.Algo == "" {
		req.Algo = planner.DefaultMultichainAlgo
	}
	p, err := SolveMultichain(mc, req)
	if err != nil {
		return nil, err
	}
	return &Planned{MultiChain: mc, Plan: p, Algo: req.Algo}, nil
}
