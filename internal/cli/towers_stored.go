package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/plot"
	"github.com/chainplan/chainplan/internal/service"
	"github.com/chainplan/chainplan/planner/simulate"
)

// This file holds what plot frontier, show-plan and simulate do with towers joined at the
// loss: a bundle file, a stored run of towers or a stored multichain plan.

// showStoredTowersPlan shows plan arg when it is a multichain plan and reports done; a plan
// of another family is left to show-plan (done false).
func showStoredTowersPlan(ctx context.Context, e *env, svc *service.Service, arg, format string) (done bool, err error) {
	id, err := strconv.ParseInt(arg, 10, 64)
	if err != nil || id < 1 {
		return false, nil // show-plan reports the bad argument
	}
	sp, err := svc.Store().Plan(ctx, id)
	if err != nil || sp.Plan.Multichain == nil {
		return false, nil // show-plan reports a missing plan
	}
	if format == "json" {
		return true, writeJSON(e.stdout, sp.Plan)
	}
	_, mc, err := svc.StoredMultichainPlan(ctx, id)
	if err != nil {
		return true, err
	}
	fmt.Fprintf(e.stdout, "plan        %d of run %d, %s, chainplan %s\n", sp.ID, sp.RunID,
		sp.CreatedAt.Format("2006-01-02 15:04:05"), sp.Version)
	prm, err := service.ParamsOf(sp.Params, &sp.Plan)
	if err != nil {
		return true, err
	}
	writeRequestText(e.stdout, prm)
	writeMultichainPlanText(e.stdout, mc, &sp.Plan)
	return true, nil
}

// simulateTowers replays a multichain plan and reports done: the plan file of f on the
// bundle --chain names (in, resolved), or a stored multichain plan (--plan-id) on its run's
// bundle. Plans of the other families are left to simulate's other paths (done false).
func simulateTowers(cmd *cobra.Command, e *env, f simulateFlags, in *service.Input) (done bool, err error) {
	var mc *chainplan.MultiChain
	var p *chainplan.Plan
	switch {
	case f.planID != "" && f.chain == "" && f.plan == "":
		id, err := parsePlanID(f.planID)
		if err != nil {
			return false, nil // simulate reports it
		}
		svc, err := openStore(cmd)
		if err != nil {
			return true, err
		}
		defer svc.Close()
		sp, err := svc.Store().Plan(cmd.Context(), id)
		if err != nil || sp.Plan.Multichain == nil {
			return false, nil
		}
		if _, mc, err = svc.StoredMultichainPlan(cmd.Context(), id); err != nil {
			return true, err
		}
		p = &sp.Plan
		f.chain, f.plan = fmt.Sprintf("run %d", sp.RunID), fmt.Sprintf("plan %d", sp.ID)
	case in != nil && in.MultiChain != nil:
		mc = in.MultiChain
		if p, err = readSchedulePlan(f.plan); err != nil {
			return true, err
		}
	default:
		return false, nil
	}
	return true, runSimulateTowers(e.stdout, mc, p, f)
}

// runSimulateTowers replays multichain plan p on bundle mc with simulate.RunMulti and
// reports as simulate does for a chain.
func runSimulateTowers(w io.Writer, mc *chainplan.MultiChain, p *chainplan.Plan, f simulateFlags) error {
	if err := checkFormat(f.format, "text", "json"); err != nil {
		return err
	}
	if p.Multichain == nil {
		return usagef("%s is a bundle of towers joined at the loss, and %s no multichain plan", f.chain, f.plan)
	}
	limit, err := simulateLimit(p, f)
	if err != nil {
		return err
	}
	rep := simulate.RunMulti(mc, p.Sequence, limit)
	out := simulation{Valid: rep.Valid, Makespan: rep.Makespan, PeakBytes: rep.Peak, PeakIndex: rep.PeakIndex,
		BudgetBytes: limit, Operations: len(p.Sequence), Issues: rep.Issues}
	if p.Multichain.Branches != mc.K() {
		out.Issues = append(out.Issues, simulate.Issue{Index: -1,
			Msg: fmt.Sprintf("the plan is for %d towers, the bundle has %d", p.Multichain.Branches, mc.K())})
	}
	out.Issues = append(out.Issues, claimIssues(p, rep.Makespan, rep.Peak)...)
	return reportSimulation(w, out, p, f, limit)
}

// towersFrontier reports whether plot frontier draws towers joined at the loss: files (in,
// resolved from the --chain, --loss and --keep-input-grad flags; nil without them) that are
// towers, a stored run of towers, or a stored multichain plan. Errors are those of reading
// the store.
func towersFrontier(cmd *cobra.Command, f *plotFlags, in *service.Input) (bool, error) {
	if in != nil {
		return in.MultiChain != nil, nil
	}
	if f.run == "" && f.planID == "" {
		return false, nil
	}
	return withStore(cmd, func(ctx context.Context, svc *service.Service) (bool, error) {
		if f.planID != "" {
			id, err := parsePlanID(f.planID)
			if err != nil {
				return false, err
			}
			sp, err := svc.Store().Plan(ctx, id)
			if err != nil {
				return false, err
			}
			return sp.Plan.Multichain != nil, nil
		}
		id, err := resolveRun(ctx, svc, f.run)
		if err != nil {
			return false, err
		}
		return svc.IsMultiChainRun(ctx, id)
	})
}

// towersFrontierFigure draws the frontier of towers joined at the loss
// (plot.MultichainFrontierOf): of the files the flags name (in, resolved), or of a stored
// run of towers, a stored plan (--plan-id) or a plan file (--plan) marked on it.
func towersFrontierFigure(cmd *cobra.Command, f *plotFlags, in *service.Input, err error) (*plot.Figure, error) {
	if err != nil {
		return nil, err
	}
	if f.bandwidth != "" {
		return nil, usagef("--bandwidth draws the offloading planners, which plan one chain, not towers joined at the loss")
	}
	if f.plan != "" && f.planID != "" {
		return nil, usagef("give --plan or --plan-id, not both")
	}
	if f.slots <= 0 || f.budgets <= 0 {
		return nil, usagef("--slots and --budgets must be positive (got %d and %d)", f.slots, f.budgets)
	}
	opts := plot.FrontierOptions{Slots: f.slots, Budgets: f.budgets, Overhead: f.overhead}
	var mc *chainplan.MultiChain
	if in != nil {
		mc = in.MultiChain
		opts.Title = fmt.Sprintf("Budget versus time: %d towers", mc.K())
	}
	if f.plan != "" {
		if opts.Chosen, err = readSchedulePlan(f.plan); err != nil {
			return nil, err
		}
	}
	if f.run != "" || f.planID != "" {
		mc, err = withStore(cmd, func(ctx context.Context, svc *service.Service) (*chainplan.MultiChain, error) {
			if f.planID != "" {
				id, _ := parsePlanID(f.planID) // checked by towersFrontier
				sp, pmc, err := svc.StoredMultichainPlan(ctx, id)
				if err != nil {
					return nil, err
				}
				opts.Chosen = &sp.Plan
				if mc == nil && f.run == "" {
					opts.Title = fmt.Sprintf("Budget versus time: run %d, %d towers", sp.RunID, pmc.K())
					return pmc, nil
				}
			}
			if f.run == "" {
				return mc, nil
			}
			id, err := resolveRun(ctx, svc, f.run)
			if err != nil {
				return nil, err
			}
			rmc, err := svc.RunMultiChain(ctx, id)
			if err == nil {
				opts.Title = fmt.Sprintf("Budget versus time: run %d, %d towers", id, rmc.K())
			}
			return rmc, err
		})
		if err != nil {
			return nil, err
		}
	}
	d, err := plot.MultichainFrontierOf(mc, opts)
	if err != nil {
		return nil, err
	}
	return plot.Frontier(d)
}
