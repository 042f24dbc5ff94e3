package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/pipeline"
)

// writePipelineText prints a pipeline plan for people: its figures, the stages with their
// device, layers, loads and stored activations, each device's memory, and the pattern of
// one period per device and per link. The figures come from the independent validator,
// so the text shows what the plan does, not only what the planner said.
func writePipelineText(w io.Writer, c *chainplan.Chain, p *pipeplan.Plan) error {
	pr, err := pipeline.ProblemOf(c, p)
	if err != nil {
		return err
	}
	rep := pipeline.Validate(pr, p)
	fmt.Fprintf(w, "algorithm   %s", p.Algo)
	if p.Chosen != "" && p.Chosen != p.Algo {
		fmt.Fprintf(w, " (returned the %s plan)", p.Chosen)
	}
	kind := "non-contiguous"
	if p.Contiguous {
		kind = "contiguous"
	}
	fmt.Fprintf(w, ", %d stages on %d devices, %s\n", len(p.Stages), usedDevices(p), kind)
	if p.Fallback != "" {
		fmt.Fprintf(w, "fallback    %s: the planner could not compute its own plan and returned this one\n", p.Fallback)
	}
	fmt.Fprintf(w, "platform    %d devices of %s, links of %s, %d weight copies, activations counted as %s\n",
		p.GPUs, bytesLabel(p.MemoryBytes), bandwidthLabel(p.Bandwidth), p.WeightCopies, activationLabel(p.ActivationModel))
	fmt.Fprintf(w, "memory      %s", temporariesLabel(p))
	if p.Headroom > 0 {
		fmt.Fprintf(w, "; headroom %.3g: plans fit %s", p.Headroom, bytesLabel(pr.Limit()))
	}
	if p.Checkpoint {
		fmt.Fprint(w, "; stages may recompute")
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "period      %s per mini-batch", secondsText(p.Period))
	if p.PredictedPeriod > 0 {
		fmt.Fprintf(w, " (partitioning predicted %s)", secondsText(p.PredictedPeriod))
	}
	fmt.Fprintf(w, "; load bound %s\n", secondsText(rep.LoadBound))
	fmt.Fprintf(w, "speed-up    %.2fx one device (sequential %s)", speedup(c, p.Period), secondsText(pr.TotalWork()))
	if mc := p.MemoryCost(); mc > 0 {
		fmt.Fprintf(w, "; %.2fx the best contiguous plan without a memory limit (period %s)", mc, secondsText(p.UnconstrainedPeriod))
	}
	fmt.Fprintln(w)
	if p.SolveMS > 0 {
		fmt.Fprintf(w, "solve time  %.3f ms\n", p.SolveMS)
	}
	if !rep.Valid {
		fmt.Fprintf(w, "INVALID     %d issues, first: %s\n", len(rep.Issues), rep.Issues[0])
		return nil
	}
	u := timeUnitOf(p.Period) // one unit for the tables: the period's
	fmt.Fprintf(w, "stages      (times in %s)\n", u.name)
	fmt.Fprintf(w, "  %5s  %6s  %-9s  %10s  %10s  %10s  %3s  %-22s  %s\n", "stage", "device", "layers", "F", "B", "out/β", "NCA", "activations", "names")
	for k, s := range p.Stages {
		comm := "-"
		if s.Last < pr.L() && (k+1 >= len(p.Stages) || p.Stages[k+1].GPU != s.GPU) {
			comm = u.num(pr.Transfer(s.Last))
		}
		cost, err := pr.Cost(s)
		if err != nil {
			return err
		}
		acts := "recorded"
		if s.Recompute != nil {
			acts = "recomputed in " + chainplan.FormatBytes(s.Recompute.BudgetBytes)
		}
		fmt.Fprintf(w, "  %5d  %6d  %-9s  %10s  %10s  %10s  %3d  %-22s  %s\n", k, s.GPU, fmt.Sprintf("%d-%d", s.First, s.Last),
			u.num(cost.Fwd), u.num(cost.Bwd), comm, rep.NCA[k], acts, layerNames(c, s))
	}
	fmt.Fprintf(w, "devices     (load in %s)\n", u.name)
	fmt.Fprintf(w, "  %6s  %-8s  %10s  %-26s  %-26s  %s\n", "device", "stages", "load", "memory (time-resolved)", "weights + buffers", "of M")
	for g := 0; g < p.GPUs; g++ {
		ks := p.StagesOn(g)
		if len(ks) == 0 {
			fmt.Fprintf(w, "  %6d  %-8s\n", g, "idle")
			continue
		}
		var load float64
		for _, k := range ks {
			load += pr.U(p.Stages[k].First, p.Stages[k].Last)
		}
		of := ""
		if p.MemoryBytes > 0 {
			of = fmt.Sprintf("%.0f %%", 100*float64(rep.MemoryPeak[g])/float64(p.MemoryBytes))
		}
		fmt.Fprintf(w, "  %6d  %-8s  %10s  %-26s  %-26s  %s\n", g, intList(ks), u.num(load), bytesLabel(rep.MemoryPeak[g]),
			bytesLabel(rep.Static[g]), of)
	}
	writePattern(w, p, u)
	return nil
}

// writePattern prints the operations of one period on each device and each link, in
// start order, times in unit u: "F2 12+34 h1" in ms is the forward of stage 2 starting at
// 12 ms for 34 ms, on mini-batch b at time start + (b + 1)·T.
func writePattern(w io.Writer, p *pipeplan.Plan, u timeUnit) {
	fmt.Fprintf(w, "pattern     one period, times in %s: OP<stage> start+duration h<shift>; mini-batch b runs at start + (b + shift)·period\n", u.name)
	byRes := map[string][]pipeplan.Op{}
	var names []string
	for _, o := range p.Pattern {
		name := fmt.Sprintf("device %d", p.Stages[o.Stage].GPU)
		if o.Op == pipeplan.CF || o.Op == pipeplan.CB {
			a, b := p.Stages[o.Stage].GPU, p.Stages[o.Stage+1].GPU
			name = fmt.Sprintf("link %d-%d", min(a, b), max(a, b))
		}
		if _, ok := byRes[name]; !ok {
			names = append(names, name)
		}
		byRes[name] = append(byRes[name], o)
	}
	slices.Sort(names)
	for _, n := range names {
		ops := byRes[n]
		slices.SortStableFunc(ops, func(a, b pipeplan.Op) int {
			switch {
			case a.Start < b.Start:
				return -1
			case a.Start > b.Start:
				return 1
			}
			return 0
		})
		parts := make([]string, len(ops))
		for i, o := range ops {
			parts[i] = fmt.Sprintf("%s%d %s+%s h%d", o.Op, o.Stage, u.num(o.Start), u.num(o.Duration), o.Shift)
		}
		fmt.Fprintf(w, "  %-9s  %s\n", n, strings.Join(parts, ", "))
	}
}

// bandwidthLabel writes bytes per second with an SI unit, as bandwidths are given
// (12 GB/s).
func bandwidthLabel(b float64) string {
	for _, u := range []struct {
		v    float64
		name string
	}{{1e12, "TB/s"}, {1e9, "GB/s"}, {1e6, "MB/s"}, {1e3, "kB/s"}} {
		if b >= u.v {
			return fmt.Sprintf("%.4g %s", b/u.v, u.name)
		}
	}
	return fmt.Sprintf("%.4g B/s", b)
}

func usedDevices(p *pipeplan.Plan) int {
	seen := map[int]bool{}
	for _, s := range p.Stages {
		seen[s.GPU] = true
	}
	return len(seen)
}

// temporariesLabel says what the plan's memory counts besides weights, buffers and stored
// activations.
func temporariesLabel(p *pipeplan.Plan) string {
	if p.Temporaries {
		return "counts the operations' temporaries, the gradients in flight and the loss"
	}
	return "leaves out the operations' temporaries and the loss (the paper's model)"
}

func activationLabel(m pipeplan.ActivationModel) string {
	if m == pipeplan.ActivationsInput {
		return "each layer's input (input)"
	}
	return "stage input + saved bytes (saved)"
}

// layerNames names a stage's first and last layers.
func layerNames(c *chainplan.Chain, s pipeplan.Stage) string {
	first := c.Stages[s.First-1].Name
	if s.First == s.Last {
		return first
	}
	return first + " .. " + c.Stages[s.Last-1].Name
}

func intList(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, ",")
}
