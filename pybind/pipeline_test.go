package pybind

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chainplan/chainplan/pipeplan"
)

// twoLayers is a chain whose contiguous plan on two devices puts one layer on each: the
// period is the larger layer's u_F + u_B, 3 (links at 1e9 bytes per unit are free).
const twoLayers = `{"format": "chainplan.chain/v1", "input_bytes": 10, "stages": [
 {"name": "a", "fwd_time": 1, "bwd_time": 2, "out_bytes": 10, "saved_bytes": 10, "fwd_tmp_bytes": 0, "bwd_tmp_bytes": 0, "param_bytes": 100},
 {"name": "b", "fwd_time": 1, "bwd_time": 2, "out_bytes": 10, "saved_bytes": 10, "fwd_tmp_bytes": 0, "bwd_tmp_bytes": 0, "param_bytes": 100}]}`

func TestPipeline(t *testing.T) {
	out, err := Pipeline(callOf(chainSource(twoLayers), `{"algo": "contiguous", "gpus": 2, "memory_bytes": 100000,
		"bandwidth": 1e9, "microbatches": 8}`))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Plan  pipeplan.Plan `json:"plan"`
		Notes []string      `json:"notes"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	p := got.Plan
	if p.Format != pipeplan.Format || len(p.Stages) != 2 || p.Stages[1].GPU != 1 || p.Microbatches != 8 || got.Notes == nil {
		t.Fatalf("plan %s", out)
	}
	if p.Period < 3-1e-6 || p.Period > 3+1e-6 {
		t.Fatalf("period %g, want 3", p.Period)
	}
	if !strings.Contains(out, `"notes":[]`) {
		t.Fatalf("notes must be a list: %s", out)
	}
}

func TestPipelineErrorCodes(t *testing.T) {
	tests := []struct {
		req, prefix string
	}{
		// The smallest memory per device reaches Python as InfeasibleBudget.min_budget_bytes.
		{`{"algo": "contiguous", "gpus": 2, "memory_bytes": 10, "bandwidth": 1e9}`, "chainplan[infeasible;min_budget_bytes="},
		{`{"algo": "contiguous", "gpus": 0, "memory_bytes": 10, "bandwidth": 1e9}`, "chainplan[bad-request]: "},
		{`{"algo": "rotor", "gpus": 2, "memory_bytes": 10, "bandwidth": 1e9}`, "chainplan[bad-request]: "},
		{`{"algo": "contiguous", "gpus": 2, "memory": 10}`, `chainplan[bad-request]: bad request: request:`},
		{`{"algo": "contiguous", "gpus": 2, "memory_bytes": 1000, "bandwidth": 1e9, "microbatches": -1}`,
			"chainplan[bad-request]: bad request: microbatches must be ≥ 1 (got -1)"},
	}
	for _, tt := range tests {
		_, err := Pipeline(callOf(chainSource(twoLayers), tt.req))
		if err == nil || !strings.HasPrefix(err.Error(), tt.prefix) {
			t.Errorf("Pipeline(%s) error %v, want prefix %q", tt.req, err, tt.prefix)
		}
	}
	if _, err := Pipeline(callOf(runSource(t.TempDir()+"/none.db", 1), `{"algo": "contiguous", "gpus": 2}`)); err == nil ||
		!strings.HasPrefix(err.Error(), "chainplan[not-found]: ") {
		t.Errorf("Pipeline on a missing database: %v", err)
	}
}
