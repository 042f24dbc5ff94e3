package main

import (
	"fmt"
	"math"
	"strings"

	golden "github.com/chainplan/chainplan/internal/paradlgolden"
	"github.com/chainplan/chainplan/planner/cluster"
	"github.com/chainplan/chainplan/planner/paradl"
)

// find returns the candidate of s at p devices (and p2 for the hybrids).
func find(a *paradl.Advice, s paradl.Strategy, p, p2 int) (paradl.Candidate, error) {
	for _, c := range a.Candidates {
		if c.Strategy == s && c.Devices == p && c.SplitDegree == p2 {
			return c, nil
		}
	}
	return paradl.Candidate{}, fmt.Errorf("no %s candidate at %d devices", s, p)
}

func relErr(got, want float64) float64 {
	if want == 0 {
		return math.Abs(got)
	}
	return math.Abs(got-want) / math.Abs(want)
}

// goldens reproduces ParaDL's three golden tables (spec §2.11) and reports the largest
// relative error of each column.
func goldens(b *strings.Builder, _ string) error {
	abci, err := readCluster("abci.yaml")
	if err != nil {
		return err
	}
	fmt.Fprintf(b, "## ParaDL's golden tables (spec §2.11)\n\n")
	fmt.Fprintf(b, "`chainplan advise` on the models behind the authors' projection logs and the spec's toy model "+
		"(internal/paradlgolden; the tests PD-1 to PD-6 check every value to 1e-9). The ABCI cluster is "+
		"examples/clusters/abci.yaml: α and β come from the span of each communicator (node, 17-node leaf, "+
		"34 nodes, beyond).\n\n")
	// (A) ResNet-50, data parallelism, weak scaling.
	var devices []int
	for _, g := range golden.ResNet50Data {
		devices = append(devices, g.P)
	}
	a, err := paradl.Advise(golden.ResNet50Log(), abci, paradl.Options{DatasetSize: golden.ResNet50DatasetSize,
		BatchPerDevice: golden.ResNet50BatchPerDevice, Strategies: []paradl.Strategy{paradl.Data}, Devices: devices,
		Gamma: 1, Optimizer: paradl.OptimizerNone})
	if err != nil {
		return err
	}
	fmt.Fprintf(b, "### (A) ResNet-50, data parallelism (data_resnet_scaling_proj.log)\n\n")
	fmt.Fprintf(b, "| p | T_comp/epoch (s) | log | T_comm/epoch (s) | log | memory/GPU (B) |\n|---:|---:|---:|---:|---:|---:|\n")
	var ec, em float64
	for _, g := range golden.ResNet50Data {
		c, err := find(a, paradl.Data, g.P, 0)
		if err != nil {
			return err
		}
		ec, em = math.Max(ec, relErr(c.ComputeS, g.CompS)), math.Max(em, relErr(c.CommS, g.CommS))
		fmt.Fprintf(b, "| %d | %.10g | %.10g | %.10g | %.10g | %d |\n", g.P, c.ComputeS, g.CompS, c.CommS, g.CommS, c.MemoryBytes)
	}
	fmt.Fprintf(b, "\nLargest relative error: T_comp %.1e, T_comm %.1e; memory %d B for every p (log: %d).\n\n",
		ec, em, golden.ResNet50MemoryBytes, golden.ResNet50MemoryBytes)
	// (B) VGG16, filter parallelism, strong scaling.
	var ps []int
	for _, g := range golden.VGG16Filter {
		ps = append(ps, g.P)
	}
	a, err = paradl.Advise(golden.VGG16Log(), abci, paradl.Options{DatasetSize: golden.VGG16DatasetSize,
		GlobalBatch: golden.VGG16GlobalBatch, Strategies: []paradl.Strategy{paradl.Filter}, Devices: ps, Gamma: 1,
		Optimizer: paradl.OptimizerNone})
	if err != nil {
		return err
	}
	fmt.Fprintf(b, "### (B) VGG16, filter parallelism at B = 32 (filter_vgg_scaling_proj.log)\n\n")
	fmt.Fprintf(b, "| p | T_comp/epoch (s) | log | T_comm/epoch (s) | log | total (s) |\n|---:|---:|---:|---:|---:|---:|\n")
	ec, em = 0, 0
	for _, g := range golden.VGG16Filter {
		c, err := find(a, paradl.Filter, g.P, 0)
		if err != nil {
			return err
		}
		ec, em = math.Max(ec, relErr(c.ComputeS, g.CompS)), math.Max(em, relErr(c.CommS, g.CommS))
		fmt.Fprintf(b, "| %d | %.12g | %.12g | %.10g | %.10g | %.6g |\n", g.P, c.ComputeS, g.CompS, c.CommS, g.CommS, c.EpochTimeS)
	}
	fmt.Fprintf(b, "\nLargest relative error: T_comp %.1e (the log prints 12 digits), T_comm %.1e. The total is "+
		"lowest at p = 4 and jumps once the communicator leaves the node, the lesson of §2.11 B.\n\n", ec, em)
	// (C) The toy model, every strategy.
	toyCluster, err := cluster.New(cluster.Cluster{Name: "toy", Nodes: []cluster.Node{{Name: "n", DeviceType: "X", Devices: 4,
		MemoryBytes: 1 << 40, IntraBandwidth: 1 / golden.ToyBeta, NICs: 1}}, IntraLatencyS: golden.ToyAlpha,
		Contention: cluster.Contention{Mode: cluster.ContentionNone}})
	if err != nil {
		return err
	}
	a, err = paradl.Advise(golden.ToyModel(), toyCluster, paradl.Options{DatasetSize: golden.ToyDatasetSize,
		GlobalBatch: golden.ToyGlobalBatch, Devices: []int{1, 3, 4}, Gamma: 1, Optimizer: paradl.OptimizerNone,
		Segments: golden.ToySegments})
	if err != nil {
		return err
	}
	fmt.Fprintf(b, "### (C) The toy model (α = 1e-5 s, β = 1e-10 s/B, D = 51,200, B = 256)\n\n")
	fmt.Fprintf(b, "| strategy | T_comp/epoch (s) | spec | T_comm/epoch (s) | spec | M/PE (B) | spec |\n|---|---:|---:|---:|---:|---:|---:|\n")
	for _, g := range golden.Toy {
		c, err := find(a, paradl.Strategy(g.Strategy), g.P, g.P2)
		if err != nil {
			return err
		}
		name := fmt.Sprintf("%s p=%d", g.Strategy, g.P)
		if g.P2 > 0 {
			name = fmt.Sprintf("%s %d×%d", g.Strategy, g.P/g.P2, g.P2)
		}
		fmt.Fprintf(b, "| %s | %.8g | %.8g | %.8g | %.8g | %d | %d |\n", name, c.ComputeS, g.CompS, c.CommS, g.CommS, c.MemoryBytes, g.MemoryBytes)
	}
	fmt.Fprintf(b, "\nLimits: channel p = 4 is infeasible (min C = 3), filter p ≤ 10, pipeline p ≤ 3, data p ≤ 256 (PD-5).\n\n")
	return nil
}
