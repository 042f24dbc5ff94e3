package paradl

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/chainplan/chainplan/planner/cluster"
	"github.com/chainplan/chainplan/planner/workload"
)

// Advise evaluates the strategies of o on model m and cluster c and returns them ranked by
// o.Goal: feasible candidates first (Rank 1, 2, ...), then the infeasible ones with the
// reason. Errors: an *OptionError naming the option, the model's check, or a
// *workload.MissingError when a strategy named in o.Strategies needs a field the profile
// lacks (with the default list such strategies are skipped, and a note says so).
//
// Cost: for each device count, O(L) per strategy and factorisation, plus a rotor (or pofo)
// solve per data-parallel candidate that does not fit; the pipeline's partition is an
// O(p·L²) min-max DP.
func Advise(m *workload.Model, c *cluster.Cluster, o Options) (*Advice, error) {
	start := time.Now()
	if err := m.Check(); err != nil {
		return nil, err
	}
	explicit := o.Strategies != nil
	o, err := o.withDefaults(c.NumDevices())
	if err != nil {
		return nil, err
	}
	e, err := newEvaluator(m, c, o)
	if err != nil {
		return nil, err
	}
	adv := &Advice{Format: Format, Model: m.Name, Cluster: c.Name, Goal: o.Goal, DatasetSize: o.DatasetSize,
		Scaling: o.scaling(), GlobalBatch: o.GlobalBatch, BatchPerDevice: o.BatchPerDevice,
		Gamma: e.gamma, GammaSource: e.gammaSource, Optimizer: e.optName, OptimizerStateBytes: e.optState,
		Notes: e.notes}
	for _, s := range o.Strategies {
		if err := e.supports(s); err != nil {
			// Named in the request, a strategy that cannot apply is an error; in the
			// default list it is skipped, and a note says why.
			if explicit {
				return nil, err
			}
			adv.Notes = append(adv.Notes, fmt.Sprintf("%s skipped: %s", s, strings.TrimPrefix(err.Error(), "chainplan: unsupported request: ")))
			continue
		}
		for _, p := range o.Devices {
			cands, err := e.evaluate(s, p)
			if err != nil {
				return nil, err
			}
			adv.Candidates = append(adv.Candidates, cands...)
		}
	}
	rank(adv.Candidates, o.Goal)
	adv.SolveMS = float64(time.Since(start).Microseconds()) / 1000
	if adv.Notes == nil {
		adv.Notes = []string{}
	}
	return adv, nil
}

// evaluate returns the candidates of strategy s at p devices (several for the hybrids,
// one per factorisation; none where the strategy does not apply at p).
func (e *evaluator) evaluate(s Strategy, p int) ([]Candidate, error) {
	switch s {
	case Serial:
		if p != 1 {
			return nil, nil
		}
		return []Candidate{e.finish(e.serial())}, nil
	case Data:
		return []Candidate{e.finish(e.data(p))}, nil
	case DataCheckpoint, DataOffload:
		c, ok, err := e.dataSaved(p, s)
		if err != nil || !ok {
			return nil, err
		}
		return []Candidate{e.finish(c)}, nil
	case Spatial:
		if p == 1 {
			return nil, nil
		}
		return []Candidate{e.finish(e.spatial(p))}, nil
	case Layer, Pipeline:
		if p == 1 {
			return nil, nil
		}
		return []Candidate{e.finish(e.pipeline(p, s))}, nil
	case Filter, Channel:
		if p == 1 {
			return nil, nil
		}
		return []Candidate{e.finish(e.tensor(p, s))}, nil
	case DataFilter, DataSpatial:
		var out []Candidate
		for _, p2 := range e.splitDegrees(p) {
			if s == DataFilter {
				out = append(out, e.finish(e.dataFilter(p/p2, p2)))
			} else {
				out = append(out, e.finish(e.dataSpatial(p/p2, p2)))
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("advise: strategy %q has no model", s)
}

// splitDegrees returns the p2 of a hybrid at p devices: the divisors of p with
// 1 < p2 < p that fit in one node (spec §2.5.8: filter or spatial inside a node, data
// across nodes).
func (e *evaluator) splitDegrees(p int) []int {
	var out []int
	for p2 := 2; p2 < p; p2++ {
		if p%p2 == 0 && p2 <= e.c.MinDevicesPerNode() {
			out = append(out, p2)
		}
	}
	return out
}

// finish completes a candidate: totals, per-iteration time, cost, memory check.
func (e *evaluator) finish(c Candidate) Candidate {
	c.ComputeS = c.Compute.ForwardBackwardS + c.Compute.WeightUpdateS + c.Compute.RecomputeS
	c.CommS = c.Comm.GradientS + c.Comm.LayerS + c.Comm.HaloS + c.Comm.GatherS + c.Comm.P2PS
	c.EpochTimeS = c.ComputeS + c.CommS
	if c.Iterations > 0 {
		c.IterationTimeS = c.EpochTimeS / float64(c.Iterations)
	}
	c.CostS = float64(c.Devices) * c.EpochTimeS
	c.MemoryBytes = c.Memory.ActivationBytes + c.Memory.WeightBytes + c.Memory.OptimizerBytes
	c.CapacityBytes = e.capacity(c.Devices)
	if c.Infeasible == "" && c.MemoryBytes > c.CapacityBytes {
		c.Infeasible = fmt.Sprintf("needs %s per device, the devices have %s", bytesText(c.MemoryBytes), bytesText(c.CapacityBytes))
	}
	c.Feasible = c.Infeasible == ""
	c.Launch = launchShape(&c, len(e.m.Layers))
	c.Warnings = append(c.Warnings, e.warnings(&c)...)
	if c.Warnings == nil {
		c.Warnings = []string{}
	}
	return c
}

// capacity is the smallest memory of devices 0..p−1 (candidates use the first p devices).
func (e *evaluator) capacity(p int) int64 {
	m := int64(math.MaxInt64)
	for i := range p {
		m = min(m, e.c.Device(i).MemoryBytes)
	}
	return m
}

// rank orders candidates: feasible ones by the goal (ties by fewer devices, then strategy
// order), numbered from 1; then the infeasible ones, by strategy and device count.
func rank(cs []Candidate, g Goal) {
	key := func(c *Candidate) float64 {
		switch g {
		case GoalCost:
			return c.CostS
		case GoalMemory:
			return float64(c.MemoryBytes)
		}
		return c.EpochTimeS
	}
	order := func(s Strategy) int { return slices.Index(Strategies, s) }
	slices.SortStableFunc(cs, func(a, b Candidate) int {
		switch {
		case a.Feasible != b.Feasible:
			if a.Feasible {
				return -1
			}
			return 1
		case a.Feasible && key(&a) != key(&b):
			if key(&a) < key(&b) {
				return -1
			}
			return 1
		case a.Devices != b.Devices && a.Feasible:
			return a.Devices - b.Devices
		case order(a.Strategy) != order(b.Strategy):
			return order(a.Strategy) - order(b.Strategy)
		}
		return a.Devices - b.Devices
	})
	n := 0
	for i := range cs {
		if cs[i].Feasible {
			n++
			cs[i].Rank = n
		}
	}
}
