package cli

import (
	"fmt"
	"io"
	"math"

	"github.com/spf13/cobra"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/service"
	"github.com/chainplan/chainplan/planner"
	"github.com/chainplan/chainplan/planner/simulate"
)

type simulateFlags struct {
	chain, plan, budget, format string
	planID                      string
}

func newSimulateCmd(e *env) *cobra.Command {
	var f simulateFlags
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Replay a plan on a chain and check it",
		Long: `Replay the sequence of a plan on a chain, independently of the planners, and report
every validity error (missing input, backward missing, repeated or out of order, budget
exceeded), the peak memory and the makespan, in exact bytes. The budget is the plan's
budget_bytes unless --budget is given. A plan whose claimed makespan or peak differs from
the replay is reported too. A plan with an offload section (pofo and the other
offloading algorithms) is replayed with its transfers in both memory models (integral:
an offload frees its tensor when it completes; fractional: continuously), and its timing,
when present, is checked as given.

A pipeline plan (chainplan.pipeline/v1, from chainplan pipeline) is checked by the
independent validator of the pipeline model instead: structure, operation durations,
dependencies of every mini-batch, exclusivity on each device and link, memory per device
(time-resolved; --budget overrides the plan's memory_bytes) and the load bound.

A multichain plan (towers joined at the loss) is replayed on the bundle --chain names
(chainplan.multichain/v1) by the multi-branch simulator: every tower's operations, the
joint loss, the input gradients dropped or kept, and nothing left in memory at the end.

With --plan-id, the plan is a stored one (chainplan show-plan) and the chain is that of
the run it was computed from.

Exit status: 0 when the plan is valid, 2 when it is not (or the input is bad).`,
		Example: `  chainplan solve --chain c.json --budget 1GiB > plan.json
  chainplan simulate --chain c.json --plan plan.json
  chainplan simulate --chain c.json --plan plan.json --budget 900MiB --format json
  chainplan simulate --plan-id 7`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// The --chain file (a chain or a bundle) is read through the source envelope,
			// once, for whichever family's plan replays on it.
			var in *service.Input
			if f.planID == "" && f.chain != "" && f.plan != "" {
				var err error
				if in, err = service.Resolve(cmd.Context(), nil, service.Source{ChainPath: f.chain}); err != nil {
					return err
				}
			}
			if done, err := simulatePipelineFile(cmd, e.stdout, f, in); done {
				return err
			}
			if done, err := simulateStoredPipelinePlan(cmd, e, f); done {
				return err
			}
			if done, err := simulateTowers(cmd, e, f, in); done {
				return err
			}
			c, p, err := simulateInput(cmd, &f, in)
			if err != nil {
				return err
			}
			return runSimulate(e.stdout, c, p, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.chain, "chain", "", "chain file (chainplan.chain/v1 JSON)")
	fl.StringVar(&f.plan, "plan", "", "plan file, as printed by chainplan solve")
	fl.StringVar(&f.budget, "budget", "", "memory limit to check (default: the plan's budget_bytes; 'none' checks none)")
	fl.StringVar(&f.format, "format", "text", "output format: text or json")
	fl.StringVar(&f.planID, "plan-id", "", "a stored plan id, replayed on its run's chain (instead of --chain and --plan)")
	return cmd
}

// simulateInput returns the chain and the plan to replay: the --chain file (in, resolved)
// and the plan file, or a stored plan and its run's chain. It names them in f.chain and
// f.plan for the messages.
func simulateInput(cmd *cobra.Command, f *simulateFlags, in *service.Input) (*chainplan.Chain, *chainplan.Plan, error) {
	if f.planID != "" {
		if f.chain != "" || f.plan != "" {
			return nil, nil, usagef("--plan-id replays a stored plan on its run's chain: give it without --chain and --plan")
		}
		db, err := openStore(cmd)
		if err != nil {
			return nil, nil, err
		}
		defer db.Close()
		sp, c, err := loadStoredPlan(cmd.Context(), db, f.planID)
		if err != nil {
			return nil, nil, err
		}
		if e, _ := planner.Lookup(sp.Plan.Algo); sp.Rebuilt && e.Family == planner.Offloading {
			return nil, nil, fmt.Errorf("%w: plan %d (%s) was stored before the database kept whole plans "+
				"(migration 0003): its transfers were not kept, and its sequence alone does not replay; plan run %d again",
				chainplan.ErrInvalidPlan, sp.ID, sp.Plan.Algo, sp.RunID)
		}
		f.chain, f.plan = fmt.Sprintf("run %d", sp.RunID), fmt.Sprintf("plan %d", sp.ID)
		return c, &sp.Plan, nil
	}
	if f.chain == "" || f.plan == "" {
		return nil, nil, usagef("--chain and --plan are required (or --plan-id for a stored plan)")
	}
	c, err := in.ChainOf(cmd.Context())
	if err != nil {
		return nil, nil, err
	}
	p, err := chainplan.ReadPlan(f.plan)
	if err != nil {
		return nil, nil, err
	}
	return c, p, nil
}

// simulation is the JSON output of simulate.
type simulation struct {
	Valid       bool             `json:"valid"`
	Makespan    float64          `json:"makespan"`
	PeakBytes   int64            `json:"peak_bytes"`
	PeakIndex   int              `json:"peak_index"`
	BudgetBytes int64            `json:"budget_bytes"`
	Operations  int              `json:"operations"`
	Issues      []simulate.Issue `json:"issues"`
}

func runSimulate(w io.Writer, c *chainplan.Chain, p *chainplan.Plan, f simulateFlags) error {
	if err := checkFormat(f.format, "text", "json"); err != nil {
		return err
	}
	limit, err := simulateLimit(p, f)
	if err != nil {
		return err
	}
	if p.Offload != nil {
		// An offloading plan (pofo, offload, ...): replay it with the transfers.
		return runSimulateOffload(w, c, p, f, limit)
	}
	rep := simulate.Replay(c, p.Sequence, limit)
	out := simulation{Valid: rep.Valid, Makespan: rep.Makespan, PeakBytes: rep.Peak, PeakIndex: rep.PeakIndex,
		BudgetBytes: limit, Operations: len(p.Sequence), Issues: rep.Issues}
	out.Issues = append(out.Issues, claimIssues(p, rep.Makespan, rep.Peak)...)
	return reportSimulation(w, out, p, f, limit)
}

// claimIssues returns the issues of a plan whose claimed makespan or peak (when it states
// them) differs from its replay's.
func claimIssues(p *chainplan.Plan, makespan float64, peak int64) []simulate.Issue {
	var issues []simulate.Issue
	if p.Makespan != 0 && math.Abs(p.Makespan-makespan) > 1e-9*math.Abs(makespan) {
		issues = append(issues, simulate.Issue{Index: -1,
			Msg: fmt.Sprintf("the plan claims makespan %.9g, the replay gives %.9g", p.Makespan, makespan)})
	}
	if p.PeakBytes != 0 && p.PeakBytes != peak {
		issues = append(issues, simulate.Issue{Index: -1,
			Msg: fmt.Sprintf("the plan claims a peak of %d B, the replay gives %d B", p.PeakBytes, peak)})
	}
	return issues
}

// simulateLimit returns the memory limit a replay checks: --budget, "none" (no limit,
// -1), or the plan's budget_bytes by default.
func simulateLimit(p *chainplan.Plan, f simulateFlags) (int64, error) {
	switch f.budget {
	case "":
		if p.BudgetBytes <= 0 {
			return -1, nil
		}
		return p.BudgetBytes, nil
	case "none":
		return -1, nil
	}
	return parseBudget(f.budget)
}

// reportSimulation prints the outcome of a replay (text or JSON) and fails with an error
// wrapping ErrInvalidPlan when the plan has issues.
func reportSimulation(w io.Writer, out simulation, p *chainplan.Plan, f simulateFlags, limit int64) error {
	out.Valid = len(out.Issues) == 0
	if out.Issues == nil {
		out.Issues = []simulate.Issue{}
	}
	if f.format == "json" {
		if err := writeJSON(w, out); err != nil {
			return err
		}
	} else {
		verdict := verdictLabel(out.Valid, len(out.Issues))
		fmt.Fprintf(w, "plan        %s: %s, %d operations\n", f.plan, verdict, len(p.Sequence))
		fmt.Fprintf(w, "makespan    %.6g\n", out.Makespan)
		fmt.Fprintf(w, "peak        %s", bytesLabel(out.PeakBytes))
		if out.PeakIndex >= 0 && out.PeakIndex < len(p.Sequence) {
			fmt.Fprintf(w, " at op %d (%s)", out.PeakIndex, p.Sequence[out.PeakIndex])
		}
		fmt.Fprintln(w)
		if limit >= 0 {
			fmt.Fprintf(w, "budget      %s\n", bytesLabel(limit))
		}
		for _, is := range out.Issues {
			fmt.Fprintf(w, "  - %s\n", is)
		}
	}
	if !out.Valid {
		return fmt.Errorf("%w: %s does not replay on %s (%d issues)", chainplan.ErrInvalidPlan, f.plan, f.chain, len(out.Issues))
	}
	return nil
}

// verdictLabel is the verdict line of simulate's text output.
func verdictLabel(valid bool, issues int) string {
	if valid {
		return "valid"
	}
	return fmt.Sprintf("INVALID (%d issues)", issues)
}
