// Command parallel evaluates the parallel planners (issue 26) and writes
// docs/parallel-eval.md with the pictures it cites:
//
//   - ParaDL's golden tables (spec §2.11) reproduced by advise, with the largest relative
//     error of each;
//   - AMP's heterogeneous fixture (GPT-2 24 layers on 3 × 4 V100 + 4 T4, gbs 32): search3d's
//     top 10 without the memory filter (as AMP ranks), how many of them would run out of
//     memory, and the top 10 with it;
//   - advise on the shipped profiles (examples/*.json) for 4 to 1,024 devices of ABCI, a
//     table per model and a plot of time per epoch against devices per strategy
//     (docs/parallel-eval-<model>.svg, through internal/plot);
//   - search3d on 64 devices (8 DGX A100) with a 40-block model: wall time, rounds
//     alternating between its configurations in one process.
//
// Usage, from the repository root:
//
//	go run ./bench/parallel [-out docs] [-rounds 5]
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/chainplan/chainplan/bench/internal/machine"
	"github.com/chainplan/chainplan/planner/cluster"
)

func main() {
	out := flag.String("out", "docs", "output folder")
	rounds := flag.Int("rounds", 5, "timing rounds of the 64-device search")
	flag.Parse()
	var b strings.Builder
	fmt.Fprintf(&b, "# Parallel planners: evaluation\n\n")
	fmt.Fprintf(&b, "Written by `go run ./bench/parallel` (bench/parallel/main.go) on %s. "+
		"The machine was shared with other jobs: wall times are medians of rounds that alternate "+
		"between the configurations compared. Everything else is deterministic.\n\n", machine.Describe())
	steps := []func(*strings.Builder, string) error{goldens, ampFixture, adviseScaling,
		func(b *strings.Builder, out string) error { return searchTiming(b, *rounds) }}
	for _, step := range steps {
		if err := step(&b, *out); err != nil {
			fmt.Fprintln(os.Stderr, "parallel:", err)
			os.Exit(1)
		}
	}
	path := filepath.Join(*out, "parallel-eval.md")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "parallel:", err)
		os.Exit(1)
	}
	fmt.Println("wrote", path)
}

func readCluster(name string) (*cluster.Cluster, error) {
	return cluster.ReadFile(filepath.Join("examples", "clusters", name))
}
