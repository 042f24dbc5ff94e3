//go:build ignore

// gen_offload_plans writes offload_plans.json: real offloading plans of the Go planners
// (planner/pofo: POFO, DYNPROG, GREEDY) for the synthetic chains of the test models, which
// python/tests/executors/test_offload.py runs. The chains come from chains.json, written by
// the test module (`python -m tests.executors.test_offload` from python/). Regenerate with
//
//	go run python/tests/executors/data/gen_offload_plans.go
//
// from the repository root, once planner.Request can ask for pofo plans the tests can
// call the planner through chainplan._bind instead.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/pofo"
)

type entry struct {
	Model  string          `json:"model"`
	Algo   string          `json:"algo"`
	Budget int64           `json:"budget_bytes"`
	Plan   *chainplan.Plan `json:"plan"`
}

func main() {
	dir := filepath.Join("python", "tests", "executors", "data")
	raw, err := os.ReadFile(filepath.Join(dir, "chains.json"))
	check(err)
	var chains map[string]json.RawMessage
	check(json.Unmarshal(raw, &chains))
	names := make([]string, 0, len(chains))
	for n := range chains {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []entry
	for _, name := range names {
		c, err := chainplan.ParseChain(chains[name])
		check(err)
		// β: the mean activation per unit of forward time, so that transfers take about
		// as long as the computations they overlap.
		var sum int64
		for k := 1; k <= c.Len(); k++ {
			sum += c.Stages[k-1].OutBytes
		}
		opts := pofo.Options{BandwidthBytesPerS: float64(sum) / float64(c.Len())}
		lo, err := pofo.MinBudget(c, opts)
		check(err)
		hi := pofo.StoreAllPeak(c)
		for _, b := range []int64{lo, lo + (hi-lo)/4, lo + (hi-lo)/2} {
			p, err := pofo.Solve(c, b, opts)
			check(err)
			out = append(out, entry{name, "pofo", b, p})
		}
		for _, b := range []int64{lo + (hi-lo)/2, lo + 3*(hi-lo)/4} {
			if p, err := pofo.SolveOffload(c, b, opts); err == nil {
				out = append(out, entry{name, "dynprog", b, p})
			} else {
				fmt.Fprintln(os.Stderr, name, "dynprog", b, err)
			}
			if p, err := pofo.SolveGreedy(c, b, opts); err == nil {
				out = append(out, entry{name, "greedy", b, p})
			} else {
				fmt.Fprintln(os.Stderr, name, "greedy", b, err)
			}
		}
	}
	b, err := json.MarshalIndent(out, "", " ")
	check(err)
	check(os.WriteFile(filepath.Join(dir, "offload_plans.json"), append(b, '\n'), 0o644))
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
