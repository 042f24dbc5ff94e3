package cli

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/service"
	"github.com/chainplan/chainplan/planner/amp"
	"github.com/chainplan/chainplan/planner/calibration"
)

type search3dFlags struct {
	src         parallelSource
	globalBatch int64
	tmpMax      int
	schedule    string
	memoryCheck string
	cut         string
	topK        int
	blocks      int
	deviceSpeed []string
	optimizer   string
	slots       int64
	calibration string
	format      string
	output      string
}

func newSearch3DCmd(e *env) *cobra.Command {
	var f search3dFlags
	cmd := &cobra.Command{
		Use:   "search3d",
		Short: "Search pipeline, data and tensor degrees, micro-batch and cuts on a cluster (AMP, with a memory filter)",
		Long: `Search the 3-D parallel strategies of a model on a (heterogeneous) cluster, as AMP does
(docs/parallel.md): every (pp, dp, tmp, mbs) with pp·dp·tmp = the cluster's devices, tmp
within a node and mbs dividing gbs/dp; ranks placed in Megatron's order (and its reverse
on a heterogeneous cluster); the blocks assigned to stages by an exact DP over AMP's cost
model (Eqs. 3-5: stage times on the slowest device type of each stage, transfers over the
slowest link, the data-parallel all-reduce) that also weighs the synchronisation; the
candidates ranked by predicted time per iteration.

The memory filter AMP lacks (--memory-check): each stage's weights, gradients, optimizer
state and the activations of the micro-batches in flight (1F1B: min(pp − i + 1, gas);
GPipe: gas) against its devices' memory. rotor (default) checkpoints a stage over capacity
within what is left and charges the recomputation; drop removes the candidate; off keeps
every candidate and says which would run out of memory. --cut madpipe uses MadPipe's
memory-aware contiguous partitioner instead of AMP's DP, best prices both.

The JSON output (chainplan.search3d/v1) lists the top-K candidates with their stages in
block and layer terms, devices, times and memory: what a training script reads to set up
its process groups. Exit status 3: no candidate fits (the message gives the least memory).`,
		Example: `  chainplan search3d --chain examples/gpt2-medium.json --batch 1 --cluster examples/clusters/amp-het-cluster.yaml \
      --global-batch 32 --device-speed T4-16GB=0.35 --format text
  chainplan search3d --chain examples/gpt-7b-40.json --batch 1 --cluster examples/clusters/a100-64.yaml \
      --global-batch 512 --cut best -o top10.json`,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSearch3D(cmd, e, f) },
	}
	fl := cmd.Flags()
	f.src.addFlags(fl)
	fl.Int64Var(&f.globalBatch, "global-batch", 0, "global batch gbs, samples per iteration (required)")
	fl.IntVar(&f.tmpMax, "tmp-max", 0, "largest tensor degree (0: the smallest node's devices)")
	fl.StringVar(&f.schedule, "schedule", amp.Schedule1F1B, "pipeline schedule the memory filter assumes: 1f1b or gpipe")
	fl.StringVar(&f.memoryCheck, "memory-check", amp.MemoryRotor, "stages over capacity: rotor (checkpoint), drop, or off (AMP's)")
	fl.StringVar(&f.cut, "cut", amp.CutAMP, "layer assignment: amp (exact DP), madpipe (memory-aware contiguous), best (both)")
	fl.IntVar(&f.topK, "top-k", 10, "candidates returned (-1: all)")
	fl.IntVar(&f.blocks, "blocks", 0, "coarsen models of more layers into this many blocks (0: 64)")
	fl.StringSliceVar(&f.deviceSpeed, "device-speed", nil, "a device type's speed relative to the profiled device, TYPE=X (repeatable), e.g. T4-16GB=0.35")
	fl.StringVar(&f.optimizer, "optimizer", "auto", "optimizer state counted: auto (profiled, else adam), adam, momentum, sgd or none")
	fl.Int64Var(&f.slots, "slots", 0, "rotor's memory slots (0: its default)")
	fl.StringVar(&f.calibration, "calibration", "", "apply a calibration fitted to measured runs on this cluster (chainplan advice calibrate -o FILE)")
	fl.StringVar(&f.format, "format", "json", "output format: json or text")
	fl.StringVarP(&f.output, "output", "o", "", "write the output to this file instead of standard output")
	return cmd
}

func search3dOptions(f search3dFlags) (amp.Options, error) {
	o := amp.Options{GlobalBatch: f.globalBatch, TMPMax: f.tmpMax, Schedule: f.schedule, MemoryCheck: f.memoryCheck,
		Cut: f.cut, TopK: f.topK, Blocks: f.blocks, Optimizer: f.optimizer, Slots: f.slots}
	if err := checkFormat(f.format, "json", "text"); err != nil {
		return o, err
	}
	if f.globalBatch < 1 {
		return o, usagef("--global-batch is required: the samples of one iteration (≥ 1)")
	}
	if f.topK == 0 || f.topK < -1 {
		return o, usagef("--top-k must be ≥ 1, or -1 for all (got %d)", f.topK)
	}
	for _, kv := range f.deviceSpeed {
		t, v, ok := strings.Cut(kv, "=")
		x, err := strconv.ParseFloat(v, 64)
		if !ok || strings.TrimSpace(t) == "" || err != nil || !(x > 0) {
			return o, usagef("--device-speed %q: want TYPE=X with X > 0, the type's speed relative to the profiled device", kv)
		}
		if o.DeviceSpeed == nil {
			o.DeviceSpeed = map[string]float64{}
		}
		o.DeviceSpeed[strings.TrimSpace(t)] = x
	}
	if f.calibration != "" {
		c, err := calibration.ReadFile(f.calibration)
		if err != nil {
			return o, &usageError{fmt.Errorf("--calibration: %w", err)}
		}
		o.Calibration = c
	}
	return o, nil
}

func runSearch3D(cmd *cobra.Command, e *env, f search3dFlags) error {
	o, err := search3dOptions(f)
	if err != nil {
		return err
	}
	got, _, err := f.src.plan(cmd, e, func(svc *service.Service, in service.ParallelInput) (*service.Advised, error) {
		for t := range o.DeviceSpeed {
			if !slices.Contains(in.Cluster.DeviceTypes(), t) {
				return nil, usagef("--device-speed: the cluster has no device type %q (it has %s)", t, strings.Join(in.Cluster.DeviceTypes(), ", "))
			}
		}
		return svc.Search3D(cmd.Context(), in, o)
	})
	if err != nil {
		return err
	}
	var b strings.Builder
	if f.format == "json" {
		err = writeJSON(&b, got.Search)
	} else {
		err = writeSearch3DText(&b, got.Search)
	}
	if err != nil {
		return err
	}
	return writeOutput(e, f.output, []byte(b.String()))
}

// writeSearch3DText prints a search3d result: the search, then one line per candidate and
// its stages.
func writeSearch3DText(w io.Writer, r *amp.Result) error {
	fmt.Fprintf(w, "search3d: %s on %s (%d devices), gbs %d, schedule %s, memory check %s, cut %s\n",
		r.Model, r.Cluster, r.Devices, r.GlobalBatch, r.Schedule, r.MemoryCheck, r.Cut)
	fmt.Fprintf(w, "%d blocks; %d (pp, dp, tmp, mbs) enumerated, %d priced; %d over capacity before checkpointing, %d checkpointed, %d dropped; %.0f ms\n",
		r.Blocks, r.Enumerated, r.Evaluated, r.OverCapacity, r.Checkpointed, r.Dropped, r.SolveMS)
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "rank\tpp\tdp\ttmp\tmbs\tgas\titeration\tpipeline\tsimulated\tdp sync\tbottleneck\tfits\tcut\tplacement\tboundaries\t")
	row := func(label string, c *amp.Candidate) {
		fits := "yes"
		if !c.Fits {
			fits = "NO"
		} else if c.Checkpointed > 0 {
			fits = fmt.Sprintf("ckpt %d", c.Checkpointed)
		}
		sim := "-"
		if c.Simulated != nil {
			sim = fmt.Sprintf("%s (%+.1f%%)", secondsText(c.Simulated.PipelineTimeS), 100*c.Simulated.Divergence)
			if !c.Simulated.Fits {
				sim += " OOM"
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%v\t\n", label, c.PP, c.DP, c.TMP, c.MBS, c.GAS,
			secondsText(c.IterationTimeS), secondsText(c.PipelineTimeS), sim, secondsText(c.DPSyncS), secondsText(c.BottleneckS),
			fits, c.Cut, c.Placement, c.Boundaries)
	}
	for i := range r.Candidates {
		row(strconv.Itoa(r.Candidates[i].Rank), &r.Candidates[i])
	}
	if r.Megatron != nil {
		row("megatron", r.Megatron)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, wn := range r.Warnings {
		fmt.Fprintf(w, "warning: %s\n", wn)
	}
	if len(r.Candidates) > 0 {
		c := &r.Candidates[0]
		fmt.Fprintf(w, "\nbest: pp=%d dp=%d tmp=%d mbs=%d, %s per iteration\n", c.PP, c.DP, c.TMP, c.MBS, secondsText(c.IterationTimeS))
		for j, st := range c.Stages {
			ck := ""
			if st.Checkpoint != nil {
				ck = fmt.Sprintf(", rotor within %s (+%s)", chainplan.FormatBytes(st.Checkpoint.BudgetBytes), secondsText(st.RecomputeS))
			}
			if c.Simulated != nil {
				sst := c.Simulated.Stages[j]
				ck += fmt.Sprintf("; simulated %s, %d in flight, %.0f%% idle", chainplan.FormatBytes(sst.PeakBytes), sst.InFlight, 100*sst.Bubble)
			}
			fmt.Fprintf(w, "  stage %d: layers %d-%d (%s .. %s) on devices %v (%s): %s per micro-batch, %s of %s, %d in flight%s\n",
				j, st.FirstLayer, st.LastLayer, st.FirstName, st.LastName, st.Devices, st.DeviceType, secondsText(st.TimeS),
				chainplan.FormatBytes(st.MemoryBytes), chainplan.FormatBytes(st.CapacityBytes), st.InFlight, ck)
		}
	}
	return nil
}
