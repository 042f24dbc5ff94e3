package pybind

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestPlanTrace(t *testing.T) {
	plan, err := planChain(tinyChain, `{"algo": "rotor", "budget_bytes": 24, "slots": 24}`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := PlanTrace(callOf(chainSource(tinyChain), `{"plan": `+plan+`}`))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Peak  int64 `json:"peak"`
		Steps []struct {
			During int64 `json:"during"`
		} `json:"steps"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	var p struct {
		Peak     int64             `json:"peak_bytes"`
		Sequence []json.RawMessage `json:"sequence"`
	}
	if err := json.Unmarshal([]byte(plan), &p); err != nil {
		t.Fatal(err)
	}
	highest := int64(0)
	for _, s := range got.Steps {
		highest = max(highest, s.During)
	}
	// One step per operation; the highest step is the replay's peak, the plan's own.
	if len(got.Steps) != len(p.Sequence) || highest != got.Peak || got.Peak != p.Peak {
		t.Fatalf("trace %s of plan %s: %d steps, highest %d, peak %d", out, plan, len(got.Steps), highest, got.Peak)
	}
	for name, req := range map[string]string{
		"bad plan":      `{"plan": {"sequence": [{"op": "X", "stage": 1}]}}`,
		"unknown field": `{"plan": ` + plan + `, "budget": 3}`,
	} {
		if _, err := PlanTrace(callOf(chainSource(tinyChain), req)); err == nil || !strings.HasPrefix(err.Error(), "chainplan[") {
			t.Errorf("%s: got %v, want a coded error", name, err)
		}
	}
}
