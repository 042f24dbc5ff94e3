package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/chainplan/chainplan/internal/plot"
	"github.com/chainplan/chainplan/planner/paradl"
)

// shipped are the example chains and the batch each was measured at (examples/README.md),
// and the dataset and batch per device advised with.
var shipped = []struct {
	file, name     string
	batch          int64
	dataset, perPE int64
}{
	{"resnet50.json", "resnet50", 128, 1_281_167, 32},
	{"vgg16.json", "vgg16", 128, 1_281_167, 32},
	{"resnet101.json", "resnet101", 64, 1_281_167, 32},
	{"densenet121.json", "densenet121", 64, 1_281_167, 32},
	{"gpt2-small.json", "gpt2-small", 8, 1_000_000, 8},
}

// adviseScaling runs advise on the shipped profiles for 4 to 1,024 devices of ABCI.
func adviseScaling(b *strings.Builder, out string) error {
	c, err := readCluster("abci.yaml")
	if err != nil {
		return err
	}
	fmt.Fprintf(b, "## advise on the shipped profiles, 4 to 1,024 devices of ABCI\n\n")
	fmt.Fprintf(b, "Weak scaling, Adam's optimizer state assumed, rotor allowed (data+checkpointing), γ calibrated "+
		"from each chain's measured store-all peak. The chains carry no module attributes, so filter, channel, "+
		"spatial and the hybrids are skipped (a profile from `chainplan.profile` records them). For instance:\n\n"+
		"    chainplan advise --chain examples/resnet50.json --batch 128 --cluster examples/clusters/abci.yaml \\\n"+
		"        --dataset-size 1281167 --batch-per-device 32 --devices 4..1024 --allow-checkpointing rotor \\\n"+
		"        --format text --plot resnet50.svg\n\n")
	devices := []int{4, 8, 16, 32, 64, 128, 256, 512, 1024}
	for _, s := range shipped {
		m, err := chainModel(s.file, s.name, s.batch)
		if err != nil {
			return err
		}
		a, err := paradl.Advise(m, c, paradl.Options{DatasetSize: s.dataset, BatchPerDevice: s.perPE, Devices: devices,
			Checkpoint: true})
		if err != nil {
			return err
		}
		strategies := []paradl.Strategy{paradl.Data, paradl.DataCheckpoint, paradl.Pipeline, paradl.Layer}
		fmt.Fprintf(b, "### %s (batch %d per device, D = %d, γ = %.3f)\n\n", s.name, s.perPE, s.dataset, a.Gamma)
		fmt.Fprintf(b, "| devices | best | epoch | data | data+checkpointing | pipeline | layer |\n|---:|---|---:|---:|---:|---:|---:|\n")
		for _, p := range devices {
			best, bestT := "—", 0.0
			cells := make([]string, len(strategies))
			for i, st := range strategies {
				cells[i] = "—"
				for _, cand := range a.Candidates {
					if cand.Strategy != st || cand.Devices != p {
						continue
					}
					if cand.Feasible {
						cells[i] = fmt.Sprintf("%.4g s", cand.EpochTimeS)
						if best == "—" || cand.EpochTimeS < bestT {
							best, bestT = string(st), cand.EpochTimeS
						}
					} else if strings.Contains(cand.Infeasible, "needs") {
						cells[i] = "OOM"
					}
				}
			}
			epoch := "—"
			if best != "—" {
				epoch = fmt.Sprintf("%.4g s", bestT)
			}
			fmt.Fprintf(b, "| %d | %s | %s | %s |\n", p, best, epoch, strings.Join(cells, " | "))
		}
		pic := fmt.Sprintf("parallel-eval-%s.svg", s.name)
		fig, err := plot.Scaling(plot.ScalingOf(a, fmt.Sprintf("%s on ABCI, %d samples per device", s.name, s.perPE)))
		if err != nil {
			return err
		}
		if err := fig.Save(filepath.Join(out, pic)); err != nil {
			return err
		}
		fmt.Fprintf(b, "\n![%s: time per epoch against devices](%s)\n\n", s.name, pic)
	}
	return nil
}
