package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/paradl"
)

// writeAdviceText prints an advice as a table: the request, notes, the first top feasible
// candidates with their breakdown, then the infeasible ones, one line per strategy and
// reason.
func writeAdviceText(w io.Writer, a *paradl.Advice, clusterDevices, top int) error {
	batch := fmt.Sprintf("global batch %d (strong scaling)", a.GlobalBatch)
	if a.Scaling == "weak" {
		batch = fmt.Sprintf("%d samples per device (weak scaling)", a.BatchPerDevice)
	}
	fmt.Fprintf(w, "advise: %s on %s (%d devices), %d samples per epoch, %s, ranked by %s\n",
		a.Model, a.Cluster, clusterDevices, a.DatasetSize, batch, a.Goal)
	fmt.Fprintf(w, "γ = %.4g (%s); optimizer %s: %s of state\n", a.Gamma, a.GammaSource, a.Optimizer,
		chainplan.FormatBytes(a.OptimizerStateBytes))
	for _, n := range a.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "rank\tstrategy\tdevices\tepoch\titeration\tcompute\tcomm\tmemory/device\tof\t\t")
	shown, feasible := 0, 0
	var warnings []string
	for _, c := range a.Candidates {
		if !c.Feasible {
			continue
		}
		feasible++
		if top > 0 && shown >= top {
			continue
		}
		shown++
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\t\n", c.Rank, c.Strategy, devicesText(&c),
			secondsText(c.EpochTimeS), secondsText(c.IterationTimeS), secondsText(c.ComputeS), secondsText(c.CommS),
			chainplan.FormatBytes(c.MemoryBytes), chainplan.FormatBytes(c.CapacityBytes))
		for _, wn := range c.Warnings {
			warnings = append(warnings, fmt.Sprintf("  %d %s %s: %s", c.Rank, c.Strategy, devicesText(&c), wn))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if feasible > shown {
		fmt.Fprintf(w, "(%d more feasible candidates; --top 0 lists them all, --format json gives every field)\n", feasible-shown)
	}
	if best := first(a.Candidates); best != nil {
		fmt.Fprintf(w, "\nbest: %s on %s devices, %s per epoch: compute %s (forward/backward %s, weight update %s, recomputation %s), "+
			"communication %s (gradients %s, layer-wise %s, halo %s, gather %s, point-to-point %s)\n",
			best.Strategy, devicesText(best), secondsText(best.EpochTimeS), secondsText(best.ComputeS),
			secondsText(best.Compute.ForwardBackwardS), secondsText(best.Compute.WeightUpdateS), secondsText(best.Compute.RecomputeS),
			secondsText(best.CommS), secondsText(best.Comm.GradientS), secondsText(best.Comm.LayerS), secondsText(best.Comm.HaloS),
			secondsText(best.Comm.GatherS), secondsText(best.Comm.P2PS))
	}
	if len(warnings) > 0 {
		fmt.Fprintln(w, "\nwarnings:")
		fmt.Fprintln(w, strings.Join(warnings, "\n"))
	}
	// One line per strategy and reason: the device counts that fail for the same reason
	// share it (the memory needed differs with p, so each count usually has its own).
	type why struct {
		s      paradl.Strategy
		reason string
	}
	infeasible := map[why][]string{}
	var order []why
	for _, c := range a.Candidates {
		if c.Feasible {
			continue
		}
		k := why{c.Strategy, c.Infeasible}
		if infeasible[k] == nil {
			order = append(order, k)
		}
		infeasible[k] = append(infeasible[k], devicesText(&c))
	}
	if len(order) > 0 {
		fmt.Fprintln(w, "\ninfeasible:")
		for _, k := range order {
			fmt.Fprintf(w, "  %s at %s devices: %s\n", k.s, strings.Join(infeasible[k], ", "), k.reason)
		}
	}
	return nil
}

// devicesText writes p, or p1×p2 for the hybrids.
func devicesText(c *paradl.Candidate) string {
	if c.SplitDegree > 0 {
		return fmt.Sprintf("%d×%d", c.DataDegree, c.SplitDegree)
	}
	if c.Segments > 0 {
		return fmt.Sprintf("%d (S=%d)", c.Devices, c.Segments)
	}
	return fmt.Sprint(c.Devices)
}

// first returns the best feasible candidate, or nil.
func first(cs []paradl.Candidate) *paradl.Candidate {
	for i := range cs {
		if cs[i].Feasible {
			return &cs[i]
		}
	}
	return nil
}
