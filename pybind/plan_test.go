package pybind

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// planAnswer is Plan's answer as Python reads it.
type planAnswer struct {
	Plan struct {
		Algo        string `json:"algo"`
		BudgetBytes int64  `json:"budget_bytes"`
		PeakBytes   int64  `json:"peak_bytes"`
		Makespan    float64
	} `json:"plan"`
	Algo       string  `json:"algo"`
	PlanID     int64   `json:"plan_id"`
	RunID      int64   `json:"run_id"`
	InputShape []int64 `json:"input_shape"`
	ChainJSON  string  `json:"chain_json"`
}

// planRun is Plan on stored run runID of the database db (a file or a PostgreSQL DSN, as
// $CHAINPLAN_DB names it), request in service.Request's JSON form as Python sends it; it
// returns Plan's whole answer.
func planRun(db string, runID int64, request string) (string, error) {
	return Plan(callOf(runSource(db, runID), request))
}

// planChain is Plan on a chain document, request as for planRun; it returns the plan
// document alone.
func planChain(chainJSON, request string) (string, error) {
	out, err := Plan(callOf(chainSource(chainJSON), request))
	if err != nil {
		return "", err
	}
	var answer struct {
		Plan json.RawMessage `json:"plan"`
	}
	if err := json.Unmarshal([]byte(out), &answer); err != nil {
		return "", err
	}
	return string(answer.Plan), nil
}

// callPlan is Plan on call, the request under "request" and every other key the
// source's, gathered into the envelope's "source".
func callPlan(t *testing.T, call map[string]any) (planAnswer, error) {
	t.Helper()
	source := map[string]any{}
	for k, v := range call {
		if k != "request" {
			source[k] = v
		}
	}
	b, err := json.Marshal(map[string]any{"request": call["request"], "source": source})
	if err != nil {
		t.Fatal(err)
	}
	out, err := Plan(string(b))
	var got planAnswer
	if err == nil {
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("Plan answered %.200s: %v", out, err)
		}
	}
	return got, err
}

// TestPlanOneCrossing: one call plans a stored run (recording it, in the database the
// environment names), a profile file or a chain, reading the budget and bandwidth as the
// user wrote them, choosing the default algorithm, and answers with what the executor
// needs.
func TestPlanOneCrossing(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "chainplan.db")
	profile := filepath.Join("..", "testdata", "profiles", "resnet_file.arrow")
	if _, err := Ingest(dbOf(db), profile); err != nil {
		t.Fatal(err)
	}
	stored, err := callPlan(t, map[string]any{"request": map[string]any{"budget": "min"}, "run_id": 1, "db_env": db})
	if err != nil {
		t.Fatal(err)
	}
	if stored.PlanID != 1 || stored.RunID != 1 || stored.Algo != "rotor" || stored.Plan.Algo != "rotor" ||
		len(stored.InputShape) == 0 || stored.ChainJSON != "" || stored.Plan.PeakBytes > stored.Plan.BudgetBytes {
		t.Fatalf("Plan of run 1 = %+v", stored)
	}
	// The request's older spelling (budget_bytes, min_budget) plans the same.
	old, err := planRun(db, 1, `{"algo": "rotor", "min_budget": true}`)
	if err != nil || !strings.Contains(old, `"budget_bytes":`+jsonInt(stored.Plan.BudgetBytes)) || !strings.Contains(old, `"plan_id":2`) {
		t.Fatalf("Plan = %.120s, %v; want budget %d, plan 2", old, err, stored.Plan.BudgetBytes)
	}
	// Without db_env the database is home's: a fresh home has no run 1.
	if _, err := callPlan(t, map[string]any{"request": map[string]any{"budget": "min"}, "run_id": 1,
		"home": t.TempDir()}); err == nil || !strings.HasPrefix(err.Error(), "chainplan[not-found]") {
		t.Fatalf("Plan of run 1 in an empty home: %v, want not-found", err)
	}

	file, err := callPlan(t, map[string]any{"request": map[string]any{"budget": "1GB", "algo": "rotor"},
		"profile_path": profile})
	if err != nil {
		t.Fatal(err)
	}
	if file.PlanID != 0 || file.RunID != 0 || file.Plan.BudgetBytes != 1e9 || len(file.InputShape) == 0 ||
		!strings.Contains(file.ChainJSON, `"chainplan.chain/v1"`) {
		t.Fatalf("Plan of a profile file = %+v", file)
	}

	chain, err := callPlan(t, map[string]any{"request": map[string]any{"budget": 24, "slots": 24}, "chain": exampleA(t)})
	if err != nil {
		t.Fatal(err)
	}
	if chain.Algo != "rotor" || chain.Plan.Makespan != 21 || chain.Plan.PeakBytes != 24 || chain.InputShape != nil ||
		chain.ChainJSON != "" { // rotor spec §4.7
		t.Fatalf("Plan of example A = %+v", chain)
	}
	pofo, err := callPlan(t, map[string]any{"request": map[string]any{"budget": "30B", "algo": "pofo",
		"bandwidth": "2/s"}, "chain": exampleA(t)})
	if err != nil || pofo.Plan.Algo != "pofo" || pofo.Plan.BudgetBytes != 30 {
		t.Fatalf("Plan with pofo = %+v, %v", pofo, err)
	}
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

// TestPlanRefusals: what Plan refuses, and the code Python reads.
func TestPlanRefusals(t *testing.T) {
	a := exampleA(t)
	for _, tt := range []struct {
		call map[string]any
		want string
	}{
		{map[string]any{"request": map[string]any{"budget": "lots"}, "chain": a}, `chainplan[bad-request]: budget: byte size "lots"`},
		{map[string]any{"request": map[string]any{"budget": true}, "chain": a}, "chainplan[bad-request]: budget must be a whole number"},
		{map[string]any{"request": map[string]any{"budget": 24, "algo": "pofo", "bandwidth": "fast"}, "chain": a},
			`chainplan[bad-request]: bandwidth: bandwidth "fast"`},
		{map[string]any{"request": map[string]any{"budget": 24, "bandwidth": 1e9}, "chain": a},
			`chainplan[bad-request]: unsupported request: a bandwidth applies to`},
		{map[string]any{"request": map[string]any{"budget": 24, "algo": "ROTOR"}, "chain": a}, `did you mean "rotor"`},
		{map[string]any{"request": map[string]any{"budget": 24, "slot": 3}, "chain": a}, `chainplan[bad-request]: request: json: unknown field "slot"`},
		{map[string]any{"request": map[string]any{"budget": 24}}, "chainplan[bad-request]: source: give exactly one of run_id, profile_path, chain_path, path, chain and towers (got none)"},
		{map[string]any{"request": map[string]any{"budget": 24}, "chain": a, "run_id": 1}, "(got run_id, chain)"},
		{map[string]any{"request": map[string]any{"budget": 24}, "chain": a, "db": "x"}, `chainplan[bad-request]: plan call: source: json: unknown field "db"`},
		{map[string]any{"request": map[string]any{"budget": 1}, "chain": a}, "chainplan[infeasible;min_budget_bytes=22]"},
		{map[string]any{"request": map[string]any{"budget": 24}, "profile_path": filepath.Join(t.TempDir(), "none.arrow")},
			"chainplan[bad-request]"},
	} {
		if _, err := callPlan(t, tt.call); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Plan(%v) = %v, want an error with %q", tt.call, err, tt.want)
		}
	}
}
