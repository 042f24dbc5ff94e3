package planner_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner"
	"github.com/chainplan/chainplan/planner/internal/testchains"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// offloadAlgos are the registry's offloading algorithms, in table order.
func offloadAlgos() []string {
	var out []string
	for _, e := range planner.Entries() {
		if e.Family == planner.Offloading {
			out = append(out, e.Name)
		}
	}
	return out
}

// goldenChain is one chain of TestOffloadPlansGolden with the slots its requests ask for.
type goldenChain struct {
	name  string
	c     *chainplan.Chain
	slots int64
}

// goldenChains are the chains of TestOffloadPlansGolden: the worked example of pofo spec
// §5.8 (64 slots: one byte per unit), two small integer chains and two chains with megabyte activations
// and fractional times (the shape of profiled chains). The grids are coarse so that the test
// takes seconds; they still round every size, which is what a refactoring could break.
func goldenChains() []goldenChain {
	out := []goldenChain{{"example", testchains.PofoExample(2), 64}}
	for i, l := range []int{5, 9} {
		rng := rand.New(rand.NewPCG(uint64(l), 7))
		out = append(out, goldenChain{fmt.Sprintf("int%d", i), testchains.Random(rng, l, testchains.RandomOptions{}), 24})
	}
	for i, l := range []int{6, 12} {
		rng := rand.New(rand.NewPCG(uint64(l), 11))
		c := testchains.Random(rng, l, testchains.RandomOptions{MaxSize: 64 << 20, MaxOverhead: 8 << 20, Float: true})
		out = append(out, goldenChain{fmt.Sprintf("mb%d", i), c, 40})
	}
	return out
}

// planDigest returns the plan's JSON without its solver times and executor positions,
// hashed: two runs of the same algorithm give the same digest exactly when they give the
// same plan.
func planDigest(t *testing.T, p *chainplan.Plan) string {
	t.Helper()
	q := *p
	q.SolveMS = 0
	if p.Offload != nil {
		// The executor's positions came after the digests (issue 10); they derive from the
		// transfers and the timing, which the digest covers.
		o := *p.Offload
		o.Positions = nil
		q.Offload = &o
	}
	q.Candidates = append([]chainplan.Candidate(nil), p.Candidates...)
	for i := range q.Candidates {
		q.Candidates[i].SolveMS = 0
	}
	b, err := json.Marshal(&q)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return fmt.Sprintf("%x", sum[:12])
}

// TestOffloadPlansGolden pins every offloading algorithm's plans (sequence, transfers,
// timing, estimates, candidates) and smallest budgets on a handful of chains, budgets and
// bandwidths to the digests in testdata/offload-plans.golden, which were generated before
// planner/pofo was split into packages (issue 10); they still hold since those were merged
// into one family package, planner/offload (issue 22): a refactoring that changes any plan
// fails here. Regenerate with `go test ./planner -run TestOffloadPlansGolden -update` and
// read the diff.
func TestOffloadPlansGolden(t *testing.T) {
	var out bytes.Buffer
	for _, gc := range goldenChains() {
		var saved, fwd float64
		for _, s := range gc.c.Stages {
			saved += float64(s.SavedBytes)
			fwd += s.FwdTime
		}
		hi, err := planner.MinBudget(gc.c, planner.Request{Algo: "store-all"})
		if err != nil {
			t.Fatal(err)
		}
		for _, beta := range []float64{saved / max(fwd, 1), saved / max(fwd, 1) / 4} {
			lo, err := planner.MinBudget(gc.c, planner.Request{Algo: "pofo", Bandwidth: beta, Slots: gc.slots})
			if err != nil {
				t.Fatal(err)
			}
			for _, algo := range offloadAlgos() {
				req := planner.Request{Algo: algo, Bandwidth: beta, Slots: gc.slots}
				mb, err := planner.MinBudget(gc.c, req)
				fmt.Fprintf(&out, "%s beta=%.6g %s min_budget=%d err=%v\n", gc.name, beta, algo, mb, err)
				for _, f := range []float64{0, 0.3, 0.7} {
					req.BudgetBytes = lo + int64(f*float64(hi-lo))
					p, err := planner.Solve(gc.c, req)
					got := fmt.Sprintf("error %v", err)
					if err == nil {
						got = planDigest(t, p)
					}
					fmt.Fprintf(&out, "%s beta=%.6g %s budget=%d %s\n", gc.name, beta, algo, req.BudgetBytes, got)
				}
			}
		}
	}
	path := filepath.Join("testdata", "offload-plans.golden")
	if *update {
		if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (generate it with -update)", err)
	}
	if got := out.String(); got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Fatalf("%s line %d:\n got %s\nwant %s", path, i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("%s: %d lines, want %d", path, len(gl), len(wl))
	}
}
