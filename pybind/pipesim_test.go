package pybind

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

func TestPipesim(t *testing.T) {
	chain := `{"format": "chainplan.chain/v1", "input_bytes": 4, "stages": [
		{"name": "a", "fwd_time": 1, "bwd_time": 2, "out_bytes": 4, "saved_bytes": 4, "fwd_tmp_bytes": 0, "bwd_tmp_bytes": 0, "param_bytes": 8},
		{"name": "b", "fwd_time": 2, "bwd_time": 2, "out_bytes": 4, "saved_bytes": 4, "fwd_tmp_bytes": 0, "bwd_tmp_bytes": 0, "param_bytes": 8}]}`
	out, err := Pipesim(callOf(chainSource(chain), `{"schedule": "gpipe", "stages": "2", "microbatches": 3, "minibatches": 1, "trace": true, "svg": true}`))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Simulation struct {
			Makespan float64 `json:"makespan"`
		} `json:"simulation"`
		Trace struct {
			TraceEvents []any `json:"traceEvents"`
		} `json:"trace"`
		SVG string `json:"svg"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	// GPipe's closed form: Σf + 2·max f + Σb + 2·max b = 3 + 4 + 4 + 4.
	if doc.Simulation.Makespan != 15 || len(doc.Trace.TraceEvents) == 0 || !strings.HasPrefix(doc.SVG, "<?xml") {
		t.Fatalf("makespan %v, %d trace events, svg %.20q", doc.Simulation.Makespan, len(doc.Trace.TraceEvents), doc.SVG)
	}
	for req, code := range map[string]string{
		`{"schedule": "gpipe", "stages": "3", "microbatches": 3}`:              "bad-request",
		`{"schedule": "nope", "stages": "2", "microbatches": 3}`:               "bad-request",
		`{"schedule": "gpipe", "stages": "2", "microbatches": 3, "x": 1}`:      "bad-request",
		`{"schedule": "periodic", "plan": {"format": "x"}, "microbatches": 3}`: "invalid-plan",
		`{"schedule": "periodic", "plan_id": 3, "microbatches": 3}`:            "bad-request",
	} {
		if _, err := Pipesim(callOf(chainSource(chain), req)); err == nil || !strings.HasPrefix(err.Error(), "chainplan["+code+"]") {
			t.Errorf("%s: %v, want %s", req, err, code)
		}
	}
	none := filepath.Join(t.TempDir(), "none.db")
	for _, src := range []string{runSource(none, 1), `{"db_env": ` + jsonString(none) + `}`} {
		if _, err := Pipesim(callOf(src, `{"schedule": "gpipe", "stages": "2", "microbatches": 3, "plan_id": 1}`)); err == nil ||
			!strings.HasPrefix(err.Error(), "chainplan[not-found]") {
			t.Errorf("a missing database (%s): %v", src, err)
		}
	}
}
