package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner"
	"github.com/chainplan/chainplan/planner/offload"
)

// This file holds the offloading side of solve and simulate (docs/pofo.md): the
// --bandwidth flag and the replay of plans with transfers.

// parseBandwidth reads a --bandwidth value with chainplan.ParseBandwidth: bytes per second
// as a plain number ("1.2e10", "0.5") or a size with an optional "/s" ("12GB/s", "1.5GiB/s"),
// the units as for --budget (docs/CLI.md, "Sizes and bandwidths").
func parseBandwidth(s string) (float64, error) {
	v, err := chainplan.ParseBandwidth(s)
	if err != nil {
		return 0, &usageError{fmt.Errorf("--%w", err)}
	}
	return v, nil
}

// offloadRequest fills the bandwidth of a solve request. An offloading algorithm needs
// --bandwidth and, unless --slots is given, uses its own default discretization.
func offloadRequest(cmd *cobra.Command, req *planner.Request, bandwidth string) error {
	e, known := planner.Lookup(req.Algo)
	reads := e.Reads(planner.FieldBandwidth)
	switch {
	case !known:
		return nil // the planner reports the unknown name, not a --bandwidth problem
	case slices.Contains(e.Needs, planner.FieldBandwidth) && bandwidth == "":
		return usagef("--algo %s needs --bandwidth (bytes per second, e.g. 12GB/s)", req.Algo)
	case !reads && bandwidth != "":
		return usagef("--bandwidth applies to the offloading algorithms only (%s), not to --algo %s",
			strings.Join(algoNames(func(e planner.Entry) bool { return e.Reads(planner.FieldBandwidth) }), ", "), req.Algo)
	case !reads:
		return nil
	}
	bw, err := parseBandwidth(bandwidth)
	if err != nil {
		return err
	}
	req.Bandwidth = bw
	if !cmd.Flags().Changed("slots") {
		req.Slots = 0
	}
	return nil
}

// writeOffloadText prints the offloading part of a plan, if any.
func writeOffloadText(w io.Writer, p *chainplan.Plan) {
	o := p.Offload
	if o == nil {
		return
	}
	fmt.Fprintf(w, "bandwidth   %.6g bytes/s, %s memory model", o.BandwidthBytesPerS, o.MemoryModel)
	if o.SyncAtLoss {
		fmt.Fprint(w, ", synchronized at the loss")
	}
	fmt.Fprintln(w)
	for _, e := range o.Estimates {
		fmt.Fprintf(w, "  %-10s makespan %s, peak %s\n", e.MemoryModel, secondsText(e.Makespan), bytesLabel(e.PeakBytes))
	}
	fmt.Fprintf(w, "transfers   %d, %s offloaded, in link order\n", len(o.Transfers), bytesLabel(o.OffloadedBytes))
	for i, t := range o.Transfers {
		fmt.Fprintf(w, "  %4d  %-8s %-7s %9s  %s%s\n", i, t.Dir, t.Tensor, bytesLabel(t.Bytes),
			transferAnchor(p.Sequence, t), transferTime(o, i))
	}
}

// writeCandidatesText prints which candidate schedule a portfolio planner (pofo) returned
// and how each candidate fared, if the plan says.
func writeCandidatesText(w io.Writer, p *chainplan.Plan) {
	if p.Chosen == "" {
		return
	}
	fmt.Fprintf(w, "chosen      %s, the fastest of %d candidates\n", p.Chosen, len(p.Candidates))
	for _, c := range p.Candidates {
		if !c.Feasible {
			fmt.Fprintf(w, "  %-12s no schedule within the budget (solved in %.3f ms)\n", c.Algo, c.SolveMS)
			continue
		}
		fmt.Fprintf(w, "  %-12s makespan %s, peak %s (solved in %.3f ms)\n", c.Algo, secondsText(c.Makespan), bytesLabel(c.PeakBytes), c.SolveMS)
	}
}

// transferAnchor names the operation a transfer waits for or must precede.
func transferAnchor(seq []chainplan.Op, t chainplan.Transfer) string {
	op := func(k int) string {
		if k >= 0 && k < len(seq) {
			return fmt.Sprintf("op %d (%s)", k, seq[k])
		}
		return fmt.Sprintf("op %d", k)
	}
	switch {
	case t.Dir == chainplan.TransferPrefetch:
		return "before " + op(t.Anchor)
	case t.Anchor < 0:
		return "from the start"
	}
	return "after " + op(t.Anchor)
}

// transferTime gives the start and duration of transfer i from the plan's timing, if any.
func transferTime(o *chainplan.Offload, i int) string {
	if o.Timing == nil || i >= len(o.Timing.TransferStart) || o.BandwidthBytesPerS <= 0 {
		return ""
	}
	return fmt.Sprintf(", starts at %s, lasts %s", secondsText(o.Timing.TransferStart[i]), secondsText(float64(o.Transfers[i].Bytes)/o.BandwidthBytesPerS))
}

// offloadSimulation is the JSON output of simulate for an offloading plan.
type offloadSimulation struct {
	Valid          bool                  `json:"valid"`
	MemoryModel    chainplan.MemoryModel `json:"memory_model"`
	Makespan       float64               `json:"makespan"`
	PeakBytes      int64                 `json:"peak_bytes"`
	BudgetBytes    int64                 `json:"budget_bytes"`
	Operations     int                   `json:"operations"`
	Transfers      int                   `json:"transfers"`
	OffloadedBytes int64                 `json:"offloaded_bytes"`
	IdleTime       float64               `json:"idle_time"`
	Estimates      []chainplan.Estimate  `json:"estimates"`
	Issues         []offload.Issue       `json:"issues"`
}

// runSimulateOffload reports the family's validation of an offloading plan
// (offload.Validate): the replay in both memory models, the plan's memory model deciding
// validity, its timing checked as given, its positions and its claims.
func runSimulateOffload(w io.Writer, c *chainplan.Chain, p *chainplan.Plan, f simulateFlags, limit int64) error {
	o := p.Offload
	v, err := offload.Validate(c, p, limit)
	if err != nil {
		return err
	}
	out := offloadSimulation{MemoryModel: o.MemoryModel, BudgetBytes: limit, Operations: len(p.Sequence), Transfers: len(o.Transfers),
		Valid: v.Main.Valid, Makespan: v.Main.Makespan, PeakBytes: v.Main.PeakBytes,
		OffloadedBytes: v.Main.OffloadedBytes, IdleTime: v.Main.IdleTime, Estimates: v.Estimates, Issues: v.Issues()}
	out.Valid = len(out.Issues) == 0
	if f.format == "json" {
		if err := writeJSON(w, out); err != nil {
			return err
		}
	} else {
		verdict := verdictLabel(out.Valid, len(out.Issues))
		fmt.Fprintf(w, "plan        %s: %s, %d operations, %d transfers\n", f.plan, verdict, len(p.Sequence), len(o.Transfers))
		fmt.Fprintf(w, "model       %s, bandwidth %.6g bytes/s\n", o.MemoryModel, o.BandwidthBytesPerS)
		fmt.Fprintf(w, "makespan    %s\n", secondsText(out.Makespan))
		fmt.Fprintf(w, "peak        %s\n", bytesLabel(out.PeakBytes))
		if limit >= 0 {
			fmt.Fprintf(w, "budget      %s\n", bytesLabel(limit))
		}
		fmt.Fprintf(w, "offloaded   %s, compute idle %s\n", bytesLabel(out.OffloadedBytes), secondsText(out.IdleTime))
		for _, e := range out.Estimates {
			state := "valid"
			if !e.Valid {
				state = "invalid"
			}
			fmt.Fprintf(w, "  %-10s %s, makespan %s, peak %s\n", e.MemoryModel, state, secondsText(e.Makespan), bytesLabel(e.PeakBytes))
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
