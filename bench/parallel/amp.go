package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/amp"
	"github.com/chainplan/chainplan/planner/workload"
)

// chainModel reads an example chain measured at batch.
func chainModel(file, name string, batch int64) (*workload.Model, error) {
	c, err := chainplan.ReadChain("examples/" + file)
	if err != nil {
		return nil, err
	}
	return workload.FromChain(c, name, batch, 4)
}

// worstStage returns the memory of a candidate's most demanding stage and its capacity.
func worstStage(c *amp.Candidate) (need, capacity int64) {
	for _, st := range c.Stages {
		if st.MemoryBytes > need || need == 0 {
			need, capacity = st.MemoryBytes, st.CapacityBytes
		}
	}
	return need, capacity
}

func candidateRows(b *strings.Builder, cs []amp.Candidate) {
	fmt.Fprintf(b, "| rank | pp | dp | tmp | mbs | gas | placement | boundaries | predicted s/iter | worst stage memory | fits |\n")
	fmt.Fprintf(b, "|---:|---:|---:|---:|---:|---:|---|---|---:|---:|---|\n")
	for _, c := range cs {
		need, capacity := worstStage(&c)
		fits := "yes"
		switch {
		case !c.Fits:
			fits = "**out of memory**"
		case c.Checkpointed > 0:
			fits = fmt.Sprintf("yes, rotor on %d stage(s)", c.Checkpointed)
		}
		fmt.Fprintf(b, "| %d | %d | %d | %d | %d | %d | %s | %v | %.4f | %s of %s | %s |\n", c.Rank, c.PP, c.DP, c.TMP, c.MBS,
			c.GAS, c.Placement, c.Boundaries, c.IterationTimeS, chainplan.FormatBytes(need), chainplan.FormatBytes(capacity), fits)
	}
	fmt.Fprintln(b)
}

// ampFixture is search3d on AMP's heterogeneous cluster, with and without the memory
// filter.
func ampFixture(b *strings.Builder, _ string) error {
	m, err := chainModel("gpt2-medium.json", "gpt2-medium", 1)
	if err != nil {
		return err
	}
	het, err := readCluster("amp-het-cluster.yaml")
	if err != nil {
		return err
	}
	speed := map[string]float64{"T4-16GB": 0.35}
	fmt.Fprintf(b, "## AMP's heterogeneous fixture with and without the memory filter\n\n")
	fmt.Fprintf(b, "GPT-2 as AMP trains it (24 layers, hidden 1024, sequence 1024, vocabulary 52,256: "+
		"examples/gpt2-medium.json, an analytic fp32 chain of one sample at 30 TFLOP/s, Adam's state assumed) "+
		"on AMP's cluster (examples/clusters/amp-het-cluster.yaml: 3 × 4 V100 16 GB at 10 Gbps between "+
		"nodes, 4 T4 at 50 Gbps, a T4 at 0.35 of a V100's speed), gbs 32:\n\n"+
		"    chainplan search3d --chain examples/gpt2-medium.json --batch 1 --cluster examples/clusters/amp-het-cluster.yaml \\\n"+
		"        --global-batch 32 --device-speed T4-16GB=0.35 --memory-check off --format text\n\n")
	off, err := amp.Search(m, het, amp.Options{GlobalBatch: 32, MemoryCheck: amp.MemoryOff, TopK: -1, DeviceSpeed: speed})
	if err != nil {
		return err
	}
	oom := 0
	for _, c := range off.Candidates[:10] {
		if !c.Fits {
			oom++
		}
	}
	dp16 := slices.IndexFunc(off.Candidates, func(c amp.Candidate) bool { return c.DP == 16 && c.MBS == 1 })
	fmt.Fprintf(b, "**Without the memory filter** (`--memory-check off`, AMP's ranking): %d of the %d (pp, dp, tmp, mbs) "+
		"candidates would run out of memory, **%d of the top 10**. dp = 16 (mbs 1) ranks %d of %d (AMP: 21st of 53); "+
		"Megatron's heuristic (largest dp that fits, uniform layers) picks pp=%d dp=%d mbs=%d at %.3f s/iter, "+
		"%.1f× the best.\n\n", off.OverCapacity, off.Enumerated, oom, dp16+1, len(off.Candidates),
		off.Megatron.PP, off.Megatron.DP, off.Megatron.MBS, off.Megatron.IterationTimeS,
		off.Megatron.IterationTimeS/off.Candidates[0].IterationTimeS)
	candidateRows(b, off.Candidates[:10])
	for _, check := range []string{amp.MemoryRotor, amp.MemoryDrop} {
		r, err := amp.Search(m, het, amp.Options{GlobalBatch: 32, MemoryCheck: check, TopK: 10, DeviceSpeed: speed})
		if err != nil {
			return err
		}
		fmt.Fprintf(b, "**With the memory filter, `--memory-check %s`**: %d candidates over capacity before checkpointing, "+
			"%d made to fit by rotor, %d dropped.\n\n", check, r.OverCapacity, r.Checkpointed, r.Dropped)
		candidateRows(b, r.Candidates)
	}
	fmt.Fprintf(b, "The top of the ranking is AMP's (mbs 1, tmp 1, pp 4 or 8: AMP measured its best at pp 8, dp 2, "+
		"mbs 1); the filter removes the mbs ≥ 4 candidates AMP would have tried and seen fail, and rotor turns "+
		"some of them into slower candidates that fit. Absolute times are this analytic chain's, not AMP's "+
		"measurements.\n\n")
	return nil
}

// searchTiming times search3d on 64 devices with a 40-block model, rounds alternating
// between its configurations.
func searchTiming(b *strings.Builder, rounds int) error {
	m, err := chainModel("gpt-7b-40.json", "gpt-7b-40", 1)
	if err != nil {
		return err
	}
	c, err := readCluster("a100-64.yaml")
	if err != nil {
		return err
	}
	configs := []amp.Options{
		{GlobalBatch: 512, MemoryCheck: amp.MemoryOff},
		{GlobalBatch: 512, MemoryCheck: amp.MemoryRotor},
		{GlobalBatch: 512, MemoryCheck: amp.MemoryRotor, Cut: amp.CutBest},
	}
	times := make([][]time.Duration, len(configs))
	results := make([]*amp.Result, len(configs))
	for range rounds {
		for i, o := range configs {
			start := time.Now()
			r, err := amp.Search(m, c, o)
			if err != nil {
				return err
			}
			times[i] = append(times[i], time.Since(start))
			results[i] = r
		}
	}
	fmt.Fprintf(b, "## search3d on 64 devices with a 40-block model\n\n")
	fmt.Fprintf(b, "examples/gpt-7b-40.json (38 decoder layers of hidden 4096, sequence 2048, embedding and head: 40 blocks) "+
		"on examples/clusters/a100-64.yaml (8 × 8 A100 80 GB), gbs 512. Median of %d rounds, the configurations "+
		"alternating in one process (a shared, loaded machine):\n\n", rounds)
	fmt.Fprintf(b, "| configuration | candidates | priced | over capacity | checkpointed | dropped | median wall time | best |\n")
	fmt.Fprintf(b, "|---|---:|---:|---:|---:|---:|---:|---|\n")
	for i := range configs {
		slices.Sort(times[i])
		r := results[i]
		best := r.Candidates[0]
		fmt.Fprintf(b, "| memory check %s, cut %s | %d | %d | %d | %d | %d | %.2f s | pp=%d dp=%d tmp=%d mbs=%d, %.3f s/iter |\n",
			r.MemoryCheck, r.Cut, r.Enumerated, r.Evaluated, r.OverCapacity, r.Checkpointed, r.Dropped,
			times[i][len(times[i])/2].Seconds(), best.PP, best.DP, best.TMP, best.MBS, best.IterationTimeS)
	}
	fmt.Fprintf(b, "\nThe target is under 10 s. `go test -bench Search64 ./planner/amp` measures the same search.\n")
	return nil
}
