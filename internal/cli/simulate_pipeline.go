package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/service"
	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/pipeline"
)

// simulatePipelineFile checks the plan file of f when it is a pipeline plan on the --chain
// file (in, resolved) and reports done; it leaves plans of the other families, and stored
// plans, to the sequence path.
func simulatePipelineFile(cmd *cobra.Command, w io.Writer, f simulateFlags, in *service.Input) (done bool, err error) {
	if f.planID != "" || f.chain == "" || f.plan == "" {
		return false, nil
	}
	data, err := chainplan.ReadInput(f.plan, "")
	if err != nil || !pipeplan.IsPipelinePlan(data) {
		return false, nil // the sequence path reports a file it cannot read
	}
	p, err := pipeplan.Parse(data)
	if err != nil {
		return true, fmt.Errorf("read plan %s: %w", f.plan, err)
	}
	c, err := in.ChainOf(cmd.Context())
	if err != nil {
		return true, err
	}
	return true, runSimulatePipeline(w, c, p, f)
}

// pipelineSimulation is the JSON output of simulate for a pipeline plan: the validator's
// report and the memory limit it was checked against.
type pipelineSimulation struct {
	*pipeline.Report
	MemoryBytes int64 `json:"memory_bytes"`
	Stages      int   `json:"stages"`
	Operations  int   `json:"operations"`
}

// runSimulatePipeline checks a chainplan.pipeline/v1 plan with the independent validator
// of planner/pipeline: on the model the plan names (devices, bandwidth, weight copies,
// activation model), against its memory_bytes or --budget as the memory per device.
func runSimulatePipeline(w io.Writer, c *chainplan.Chain, p *pipeplan.Plan, f simulateFlags) error {
	if err := checkFormat(f.format, "text", "json"); err != nil {
		return err
	}
	pr, err := pipeline.ProblemOf(c, p)
	if err != nil {
		return err
	}
	switch f.budget {
	case "":
	case "none":
		pr = pr.WithMemory(1 << 62)
	default:
		m, err := parseBudget(f.budget)
		if err != nil {
			return err
		}
		pr = pr.WithMemory(m)
	}
	rep := pipeline.Validate(pr, p)
	out := pipelineSimulation{Report: rep, MemoryBytes: pr.Options().MemoryBytes, Stages: len(p.Stages), Operations: len(p.Pattern)}
	if f.format == "json" {
		if err := writeJSON(w, out); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(w, "plan        %s: %s, %s on %d devices, %d stages, %d operations\n", f.plan,
			verdictLabel(rep.Valid, len(rep.Issues)), p.Algo, p.GPUs, len(p.Stages), len(p.Pattern))
		fmt.Fprintf(w, "period      %s per mini-batch (load bound %s, speedup %.3g)\n", secondsText(rep.Period), secondsText(rep.LoadBound), rep.Speedup)
		if f.budget != "none" {
			fmt.Fprintf(w, "memory      %s per device\n", bytesLabel(pr.Options().MemoryBytes))
		}
		for g := range rep.MemoryPeak {
			fmt.Fprintf(w, "  gpu %-3d   peak %s, NCA model %s, weights and buffers %s\n", g,
				bytesLabel(rep.MemoryPeak[g]), bytesLabel(rep.MemoryNCA[g]), bytesLabel(rep.Static[g]))
		}
		for _, is := range rep.Issues {
			fmt.Fprintf(w, "  - %s\n", is)
		}
	}
	if !rep.Valid {
		return fmt.Errorf("%w: %s does not validate on %s (%d issues)", chainplan.ErrInvalidPlan, f.plan, f.chain, len(rep.Issues))
	}
	return nil
}
