package cli

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/pipesim"
)

// writePipesimText prints a simulation for people: the schedule and its figures, each
// stage, device and link, the warnings, and what the runner measured beside it.
func writePipesimText(w io.Writer, c *chainplan.Chain, out *pipesimOutput) {
	r := out.Result
	unit := "s"
	if r.UnitTime {
		unit = "time points"
	}
	t := func(v float64) string { return fmt.Sprintf("%.6g %s", v, unit) }
	links := "no links (free transfers)"
	if r.Links {
		links = counted(len(r.PerLink), "link", "links")
	}
	if r.UnitTime {
		links = "unit time"
	}
	fmt.Fprintf(w, "schedule     %s: %d stages on %d devices, %d micro-batches per mini-batch, %d mini-batches; %s\n",
		r.Schedule, len(r.Stages), len(r.PerDevice), r.Microbatches, r.Minibatches, links)
	fmt.Fprintf(w, "makespan     %s\n", t(r.Makespan))
	fmt.Fprintf(w, "period       %s per mini-batch, %s per micro-batch", t(r.Period), t(r.MicrobatchPeriod))
	if r.PlanPeriod > 0 {
		fmt.Fprintf(w, " (the plan's period: %s)", t(r.PlanPeriod))
	}
	fmt.Fprintf(w, "\n             %s\n", periodOrigin(r))
	fmt.Fprintf(w, "weights      v = %d in the steady state (staleness up to %d), %s of updates", r.VersionDifference, r.MaxStaleness, counted(r.Chains, "sequence", "sequences"))
	if r.PaperVersionDifference > 0 {
		fmt.Fprintf(w, "; the paper's formula gives v = %d", r.PaperVersionDifference)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "stages       (busy in %s)\n", unit)
	fmt.Fprintf(w, "  %5s  %-9s  %6s  %12s  %6s  %6s  %9s  %-22s  %8s  %s\n", "stage", "layers", "device", "busy", "bubble",
		"steady", "in flight", "activations (peak)", "versions", "names")
	for _, x := range r.PerStage {
		ck := ""
		if x.Checkpointed {
			ck = " (checkpointed)"
		}
		names := ""
		if c != nil {
			names = layerNames(c, r.Stages[x.Stage])
		}
		fmt.Fprintf(w, "  %5d  %-9s  %6d  %12.6g  %6.3f  %6.3f  %9d  %-22s  %8d  %s%s\n", x.Stage, fmt.Sprintf("%d-%d", x.First, x.Last),
			x.Device, x.Busy, x.Bubble, x.SteadyBubble, x.PeakInflight, chainplan.FormatBytes(x.PeakActivationBytes),
			x.WeightVersions, names, ck)
	}
	fmt.Fprintln(w, "devices")
	limit := ""
	if r.MemoryBytes > 0 {
		limit = " of " + chainplan.FormatBytes(r.MemoryBytes)
	}
	for _, d := range r.PerDevice {
		fits := ""
		if !d.Fits {
			fits = "  DOES NOT FIT"
		}
		fmt.Fprintf(w, "  device %-3d  stages %-8s  busy %6.1f %%  peak %s%s (weights and buffers %s)%s\n", d.Device,
			intsLabel(d.Stages), 100*(1-d.Bubble), bytesLabel(d.PeakBytes), limit, chainplan.FormatBytes(d.StaticBytes), fits)
	}
	if len(r.PerLink) > 0 {
		fmt.Fprintln(w, "links")
		for _, l := range r.PerLink {
			fmt.Fprintf(w, "  %-10s  busy %s (%.1f %%)\n", l.Name, t(l.Busy), 100*l.Utilization)
		}
	}
	for _, s := range r.Warnings {
		fmt.Fprintf(w, "warning      %s\n", s)
	}
	if len(out.Comparisons) > 0 {
		writeComparisons(w, out)
	}
}

// periodOrigin says where the period of r comes from: a steady state, which more
// mini-batches would not change, or the mean of a run too short or without one, which
// --minibatches changes (the warnings say why).
func periodOrigin(r *pipesim.Result) string {
	over := fmt.Sprintf("mini-batches %d..%d", r.PeriodFrom, r.PeriodTo)
	switch {
	case r.Steady && r.PeriodFrom == r.PeriodTo:
		return "the steady state: one step from an empty pipeline, as every step of the schedule"
	case r.Steady && r.Cycle > 1:
		return fmt.Sprintf("the steady state, which repeats every %d mini-batches: their mean over %s", r.Cycle, over)
	case r.Steady:
		return "the steady state, measured over " + over
	case r.Minibatches < 2:
		return "not a steady state: the makespan of the one mini-batch simulated (see the warnings)"
	}
	return "not a steady state: the mean over " + over + ", which changes with --minibatches (see the warnings)"
}

// writeComparisons prints each rank's measured execution beside the simulated step.
func writeComparisons(w io.Writer, out *pipesimOutput) {
	fmt.Fprintln(w, "measured by the pipeline runner, beside the simulation of the same step (seconds, bytes)")
	fmt.Fprintf(w, "  %4s  %9s  %-13s  %3s  %4s  %10s  %10s  %6s  %10s  %10s  %6s  %12s  %12s  %6s\n", "plan", "execution",
		"schedule", "N", "rank", "step", "simulated", "ratio", "per mb", "simulated", "ratio", "peak", "simulated", "ratio")
	for _, c := range out.Comparisons {
		fmt.Fprintf(w, "  %4d  %9d  %-13s  %3d  %4d  %10s  %10s  %6s  %10s  %10s  %6s  %12d  %12d  %6s\n", c.PlanID, c.ExecutionID,
			c.Schedule, c.Microbatches, c.Rank, num(c.MeasuredStepS), num(c.PredictedStepS), ratio(c.MeasuredStepS, c.PredictedStepS),
			num(c.MeasuredMicrobatchS), num(c.PredictedMicrobatchS), ratio(c.MeasuredMicrobatchS, c.PredictedMicrobatchS),
			c.MeasuredPeakBytes, c.PredictedPeakBytes, ratio(float64(c.MeasuredPeakBytes), float64(c.PredictedPeakBytes)))
	}
}

func num(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	return fmt.Sprintf("%.4g", v)
}

// ratio is measured/predicted, or a dash.
func ratio(measured, predicted float64) string {
	if math.IsNaN(measured) || math.IsNaN(predicted) || predicted == 0 {
		return "—"
	}
	return fmt.Sprintf("%.3f", measured/predicted)
}

func intsLabel(xs []int) string {
	var parts []string
	for _, x := range xs {
		parts = append(parts, fmt.Sprint(x))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ",")
}

// counted writes n with the noun's singular or plural form.
func counted(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
