package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chainplan/chainplan/internal/plot"
	"github.com/chainplan/chainplan/internal/service"
	"github.com/chainplan/chainplan/planner/paradl"
)

type adviseFlags struct {
	src            parallelSource
	datasetSize    int64
	globalBatch    int64
	batchPerDevice int64
	scaling        string
	strategies     string
	devices        string
	goal           string
	gamma          string
	optimizer      string
	checkpointing  string
	offloading     string
	segments       int
	slots          int64
	format         string
	top            int
	plot           string
	output         string
}

func newAdviseCmd(e *env) *cobra.Command {
	var f adviseFlags
	cmd := &cobra.Command{
		Use:   "advise",
		Short: "Rank parallel training strategies for a model on a cluster (ParaDL's oracle)",
		Long: `Rank data, spatial, layer, pipeline, filter, channel, data+filter and data+spatial
parallelism at each device count with ParaDL's analytical model (docs/parallel.md): time per
epoch split into computation (forward/backward, weight update, recomputation) and
communication (gradient all-reduce, layer-wise collectives, halos, point-to-point), memory
per device against the cluster's, each strategy's limits, and warnings from ParaDL's table
of bottlenecks. Communication costs come from the cluster description: α and β per
communicator span (node, hierarchy level), contention on shared network interfaces.

--allow-checkpointing rotor adds "data+checkpointing": when data parallelism does not fit,
rotor plans the per-device chain in the memory left after weights, gradients and optimizer
state, and its recomputation is charged. --allow-offload pofo does the same with pofo
(the cluster must give host_bw).

Strategies that need fields a profile lacks (module attributes for filter, channel and
spatial parallelism) are skipped with a note, or refused when named in --strategies.
Exit status 3 means no candidate fits: the message gives the least memory any needs.`,
		Example: `  chainplan advise --chain examples/resnet50.json --batch 128 --cluster examples/clusters/abci.yaml \
      --dataset-size 1281167 --batch-per-device 64 --devices 4..1024 --format text
  chainplan advise --run latest --cluster examples/clusters/a100-64.yaml --dataset-size 50000 \
      --global-batch 512 --strategies data,pipeline,data+checkpointing --allow-checkpointing rotor
  chainplan advise --chain examples/vgg16.json --batch 128 --cluster examples/clusters/abci.yaml \
      --dataset-size 1281167 --batch-per-device 32 --goal cost --plot scaling.svg`,
		RunE: func(cmd *cobra.Command, _ []string) error { return runAdvise(cmd, e, f) },
	}
	fl := cmd.Flags()
	f.src.addFlags(fl)
	fl.Int64Var(&f.datasetSize, "dataset-size", 0, "samples per epoch, D (required)")
	fl.Int64Var(&f.globalBatch, "global-batch", 0, "global batch B, fixed for every device count (strong scaling)")
	fl.Int64Var(&f.batchPerDevice, "batch-per-device", 0, "samples per device b, B = b·p (weak scaling)")
	fl.StringVar(&f.scaling, "scaling", "", "weak or strong; must agree with the batch flag given (optional)")
	fl.StringVar(&f.strategies, "strategies", "all", "comma-separated strategies: "+orList(strategyNames()))
	fl.StringVar(&f.devices, "devices", "", "device counts: a range 4..1024 (powers of two), a list 4,8,16 (default: 1, 2, 4, ... up to the cluster)")
	fl.StringVar(&f.goal, "goal", "time", "rank by time (epoch time), cost (devices × time) or memory (per device)")
	fl.StringVar(&f.gamma, "gamma", "auto", "memory reuse factor γ: auto (calibrated from the profile) or a number")
	fl.StringVar(&f.optimizer, "optimizer", "auto", "optimizer state counted: auto (profiled, else adam), adam, momentum, sgd or none")
	fl.StringVar(&f.checkpointing, "allow-checkpointing", "", "rotor: add data+checkpointing candidates")
	fl.StringVar(&f.offloading, "allow-offload", "", "pofo: add data+offloading candidates")
	fl.IntVar(&f.segments, "segments", 0, "pipeline micro-batches S (0: min(4p, B))")
	fl.Int64Var(&f.slots, "slots", 0, "memory slots of rotor and pofo (0: their defaults)")
	fl.StringVar(&f.format, "format", "json", "output format: json or text")
	fl.IntVar(&f.top, "top", 25, "text output: feasible candidates listed (0: all)")
	fl.StringVarP(&f.output, "output", "o", "", "write the output to this file instead of standard output")
	fl.StringVar(&f.plot, "plot", "", "also draw time per epoch against devices per strategy to this file (.svg or .png)")
	return cmd
}

func strategyNames() []string {
	out := make([]string, len(paradl.Strategies))
	for i, s := range paradl.Strategies {
		out[i] = string(s)
	}
	return out
}

// adviseOptions reads the flags into the planner's options and the device counts asked
// for, which the cluster bounds; every error names the flag and what is wrong with the
// value given (given reports whether a flag was given, so that a bad value is not called
// missing).
func adviseOptions(f adviseFlags, given func(flag string) bool) (paradl.Options, deviceCounts, error) {
	var devs deviceCounts
	o := paradl.Options{DatasetSize: f.datasetSize, GlobalBatch: f.globalBatch, BatchPerDevice: f.batchPerDevice,
		Goal: paradl.Goal(f.goal), Optimizer: f.optimizer, Segments: f.segments, Slots: f.slots}
	if err := checkFormat(f.format, "json", "text"); err != nil {
		return o, devs, err
	}
	if f.plot != "" {
		if _, err := plot.FormatOf(f.plot); err != nil {
			return o, devs, &usageError{fmt.Errorf("--plot: %w", err)}
		}
	}
	for _, n := range []struct {
		flag string
		v    int64
	}{{"dataset-size", f.datasetSize}, {"global-batch", f.globalBatch}, {"batch-per-device", f.batchPerDevice}} {
		if given(n.flag) && n.v < 1 {
			return o, devs, usagef("--%s must be positive, got %d", n.flag, n.v)
		}
	}
	switch {
	case f.datasetSize < 1:
		return o, devs, usagef("--dataset-size is required: the samples of one epoch (≥ 1)")
	case f.globalBatch == 0 && f.batchPerDevice == 0:
		return o, devs, usagef("--global-batch (strong scaling) or --batch-per-device (weak scaling) is required")
	case f.scaling == "weak" && f.batchPerDevice == 0, f.scaling == "strong" && f.globalBatch == 0:
		return o, devs, usagef("--scaling %s goes with --%s", f.scaling, map[string]string{"weak": "batch-per-device", "strong": "global-batch"}[f.scaling])
	case f.scaling != "" && f.scaling != "weak" && f.scaling != "strong":
		return o, devs, usagef("--scaling must be weak or strong (got %q)", f.scaling)
	case f.checkpointing != "" && f.checkpointing != "rotor":
		return o, devs, usagef("--allow-checkpointing: only rotor plans the per-device chain (got %q)", f.checkpointing)
	case f.offloading != "" && f.offloading != "pofo":
		return o, devs, usagef("--allow-offload: only pofo plans offloading with recomputation (got %q)", f.offloading)
	}
	o.Checkpoint, o.Offload = f.checkpointing != "", f.offloading != ""
	var err error
	if o.Strategies, err = paradl.ParseStrategies(f.strategies); err != nil {
		return o, devs, &usageError{fmt.Errorf("--strategies: %w", err)}
	}
	if devs, err = parseDevices(f.devices); err != nil {
		return o, devs, err
	}
	o.Devices = devs.counts
	if f.gamma != "auto" {
		if o.Gamma, err = strconv.ParseFloat(f.gamma, 64); err != nil || !(o.Gamma > 0) {
			return o, devs, usagef("--gamma must be auto or a positive number (got %q)", f.gamma)
		}
	}
	return o, devs, nil
}

func runAdvise(cmd *cobra.Command, e *env, f adviseFlags) error {
	o, devs, err := adviseOptions(f, cmd.Flags().Changed)
	if err != nil {
		return err
	}
	got, in, err := f.src.plan(cmd, e, func(svc *service.Service, in service.ParallelInput) (*service.Advised, error) {
		if err := devs.within(in.Cluster.NumDevices(), f.src.cluster); err != nil {
			return nil, err
		}
		return svc.Advise(cmd.Context(), in, o)
	})
	if err != nil {
		return err
	}
	a := got.Advice
	var b strings.Builder
	if f.format == "json" {
		err = writeJSON(&b, a)
	} else {
		err = writeAdviceText(&b, a, in.Cluster.NumDevices(), f.top)
	}
	if err != nil {
		return err
	}
	if err := writeOutput(e, f.output, []byte(b.String())); err != nil {
		return err
	}
	if f.plot != "" {
		title := fmt.Sprintf("%s on %s", a.Model, a.Cluster)
		if err := savePicture(e, f.plot, func() (*plot.Figure, error) { return plot.Scaling(plot.ScalingOf(a, title)) }); err != nil {
			return err
		}
	}
	return service.CheckFeasible(a)
}
