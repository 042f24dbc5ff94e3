package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/contiguous"
	"github.com/chainplan/chainplan/planner/pipeline"
)

// writePipelinePlan plans Example A on 2 devices with the contiguous planner and writes
// the plan, edited by edit, to a file.
func writePipelinePlan(t *testing.T, chain string, edit func(p *pipeplan.Plan)) string {
	t.Helper()
	c, err := chainplan.ReadChain(chain)
	if err != nil {
		t.Fatal(err)
	}
	pr, err := pipeline.NewProblem(c, pipeplan.Options{GPUs: 2, MemoryBytes: 100, Bandwidth: 4})
	if err != nil {
		t.Fatal(err)
	}
	p, err := contiguous.Solve(pr)
	if err != nil {
		t.Fatal(err)
	}
	edit(p)
	data, err := p.MarshalIndent()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "pipeline.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestSimulatePipeline(t *testing.T) {
	chain := writeChain(t)
	plan := writePipelinePlan(t, chain, func(*pipeplan.Plan) {})
	code, out, errs := run(t, "simulate", "--chain", chain, "--plan", plan)
	if code != 0 || !strings.Contains(out, ": valid, contiguous on 2 devices") || !strings.Contains(out, "gpu 1") {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	code, out, errs = run(t, "simulate", "--chain", chain, "--plan", plan, "--format", "json")
	var sim struct {
		Valid       bool    `json:"valid"`
		Period      float64 `json:"period"`
		MemoryBytes int64   `json:"memory_bytes"`
		MemoryPeak  []int64 `json:"memory_peak_bytes"`
	}
	if err := json.Unmarshal([]byte(out), &sim); code != 0 || err != nil || !sim.Valid || sim.MemoryBytes != 100 || len(sim.MemoryPeak) != 2 {
		t.Fatalf("exit %d, %v: %s%s", code, err, out, errs)
	}
	// Below the plan's peak: invalid, exit 2, the device named.
	code, out, _ = run(t, "simulate", "--chain", chain, "--plan", plan, "--budget", "10")
	if code != 2 || !strings.Contains(out, "INVALID") || !strings.Contains(out, "more than the memory 10") {
		t.Fatalf("--budget 10: exit %d\n%s", code, out)
	}
	// A backward moved one period earlier breaks a dependency.
	bad := writePipelinePlan(t, chain, func(p *pipeplan.Plan) { p.Pattern[p.Find(pipeplan.B, 0)].Shift-- })
	if code, out, _ = run(t, "simulate", "--chain", chain, "--plan", bad); code != 2 || !strings.Contains(out, "for the same mini-batch") {
		t.Fatalf("moved backward: exit %d\n%s", code, out)
	}
	// A document that breaks the format: exit 2 naming the field.
	doc := writePipelinePlan(t, chain, func(p *pipeplan.Plan) { p.Pattern[0].Op = "X" })
	if code, _, errs = run(t, "simulate", "--chain", chain, "--plan", doc); code != 2 || !strings.Contains(errs, "pattern[0].op") {
		t.Fatalf("bad op: exit %d\n%s", code, errs)
	}
}
