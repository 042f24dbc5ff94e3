package paradl

import (
	"fmt"
	"math"

	"github.com/chainplan/chainplan/planner/workload"
)

// warnings returns the candidate's warnings, from ParaDL's table of limitations and
// bottlenecks (spec §2.10e, Table 6) as §5.2 step 3 asks.
func (e *evaluator) warnings(c *Candidate) []string {
	var w []string
	pct := func(part, whole float64) float64 {
		if whole <= 0 {
			return 0
		}
		return 100 * part / whole
	}
	// Without batch times a note says once that per-sample times are held constant.
	lo, _ := e.m.ProfiledBatches()
	if e.m.Known.Has(workload.FieldBatchTimes) && c.SamplesPerDevice > 0 && c.SamplesPerDevice < float64(lo) {
		w = append(w, fmt.Sprintf("%.4g samples per device is below the smallest profiled batch (%d): per-sample times extrapolated, likely optimistic",
			c.SamplesPerDevice, lo))
	}
	if c.SamplesPerDevice > 0 && c.SamplesPerDevice != math.Trunc(c.SamplesPerDevice) && (c.Strategy == Data || c.Strategy == DataFilter) {
		w = append(w, fmt.Sprintf("B/p = %.4g is not a whole number of samples", c.SamplesPerDevice))
	}
	switch c.Strategy {
	case Data, DataFilter, DataSpatial, DataCheckpoint, DataOffload, Spatial:
		if s := pct(c.Comm.GradientS, c.EpochTimeS); s >= 25 {
			w = append(w, fmt.Sprintf("gradient exchange is %.0f%% of the epoch (communication-bound)", s))
		}
		if s := pct(c.Compute.WeightUpdateS, c.ComputeS); s >= 15 {
			w = append(w, fmt.Sprintf("weight update is %.0f%% of the computation: every replica updates all its weights", s))
		}
	}
	switch c.Strategy {
	case Filter, Channel, DataFilter:
		if s := pct(c.Comm.LayerS, c.EpochTimeS); s >= 10 {
			w = append(w, fmt.Sprintf("layer-wise collectives: %d per iteration (3 messages each), scaling with B·Σ|y| and α × modules; %.0f%% of the epoch",
				e.collectiveCount(), s))
		}
		w = append(w, "activations are not divided: every device holds full layer outputs after each all-gather")
	case Spatial, DataSpatial:
		w = append(w, "halo exchange modelled with the cluster's α and β; ParaDL measured MPI halos at about 60% of the gradient all-reduce")
	case Layer:
		w = append(w, "no speed-up: one device computes at a time; this saves memory only")
	case Pipeline:
		w = append(w, "memory counts all segments stashed (GPipe, no recomputation); checkpointing at the stage boundaries cuts it")
	case DataCheckpoint, DataOffload:
		if c.Saver != nil && c.Saver.MakespanS > 0 {
			w = append(w, fmt.Sprintf("%s adds %.1f%% to each iteration's computation to fit %s of activations",
				c.Saver.Algo, pct(c.Saver.MakespanS-c.Saver.BaseS, c.Saver.BaseS), bytesText(c.Saver.BudgetBytes)))
		}
	}
	if (c.Strategy == Layer || c.Strategy == Pipeline) && len(c.Groups) > 1 {
		if imb := e.imbalance(c); imb >= 10 {
			w = append(w, fmt.Sprintf("stage imbalance %.0f%%: the slowest group runs %.0f%% above the mean", imb, imb))
		}
	}
	if c.Strategy == DataFilter && e.c.Contention.Mode != "none" {
		_, data := hybridGroups(c.DataDegree, c.SplitDegree)
		if phi := e.c.Phi(e.c.Group(data), data, c.SplitDegree); phi > 1 {
			w = append(w, fmt.Sprintf("contention: %d data groups share each node's network interfaces (φ = %g)", c.SplitDegree, phi))
		}
	}
	if c.CapacityBytes > 0 && (c.Strategy == Data || c.Strategy == DataFilter) {
		static := c.Memory.WeightBytes + c.Memory.OptimizerBytes
		if s := pct(float64(static), float64(c.CapacityBytes)); s >= 50 {
			w = append(w, fmt.Sprintf("memory redundancy: weights, gradients and optimizer state take %.0f%% of each device", s))
		}
	}
	return w
}

// imbalance returns how far the slowest group of a layer or pipeline candidate runs above
// the mean group, in percent.
func (e *evaluator) imbalance(c *Candidate) float64 {
	seg := c.SamplesPerDevice
	var total, worst float64
	for _, g := range c.Groups {
		var t float64
		for i := g[0] - 1; i < g[1]; i++ {
			f, b := e.m.Layers[i].TimesAt(e.m.BatchSize, seg)
			t += f + b
		}
		total += t
		worst = math.Max(worst, t)
	}
	mean := total / float64(len(c.Groups))
	if mean <= 0 {
		return 0
	}
	return 100 * (worst - mean) / mean
}
