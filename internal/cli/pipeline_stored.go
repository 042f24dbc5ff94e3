package cli

import (
	"context"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/chainplan/chainplan/internal/service"
)

// This file holds what show-plan and simulate --plan-id do with a stored pipeline plan
// (chainplan pipeline --run): print its document or its text form, and check it with the
// pipeline validator on its run's chain.

// showStoredPipelinePlan shows plan arg when it is a pipeline plan and reports done; a plan
// of another family is left to show-plan (done false).
func showStoredPipelinePlan(ctx context.Context, e *env, svc *service.Service, arg, format string) (done bool, err error) {
	id, err := strconv.ParseInt(arg, 10, 64)
	if err != nil || id < 1 {
		return false, nil // show-plan reports the bad argument
	}
	p, c, ok, err := svc.StoredPipelinePlan(ctx, id)
	if !ok {
		return err != nil, err
	}
	if format == "json" {
		b, err := p.MarshalIndent()
		if err != nil {
			return true, err
		}
		_, err = e.stdout.Write(b)
		return true, err
	}
	sp, err := svc.Store().Plan(ctx, id)
	if err != nil {
		return true, err
	}
	fmt.Fprintf(e.stdout, "plan        %d of run %d, %s, chainplan %s\n", sp.ID, sp.RunID,
		sp.CreatedAt.Format("2006-01-02 15:04:05"), sp.Version)
	return true, writePipelineText(e.stdout, c, p)
}

// simulateStoredPipelinePlan checks stored plan --plan-id with the pipeline validator when
// it is a pipeline plan, and reports done; other plans are left to simulate.
func simulateStoredPipelinePlan(cmd *cobra.Command, e *env, f simulateFlags) (done bool, err error) {
	id, err := strconv.ParseInt(f.planID, 10, 64)
	if f.planID == "" || f.chain != "" || f.plan != "" || err != nil || id < 1 {
		return false, nil // simulate reports the bad or conflicting arguments
	}
	svc, err := openStore(cmd)
	if err != nil {
		return true, err
	}
	defer svc.Close()
	p, c, ok, err := svc.StoredPipelinePlan(cmd.Context(), id)
	if !ok {
		return err != nil, err
	}
	f.plan = fmt.Sprintf("plan %d", id)
	return true, runSimulatePipeline(e.stdout, c, p, f)
}
