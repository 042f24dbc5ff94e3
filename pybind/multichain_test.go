package pybind

import (
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
)

const twoTowers = `{"format": "chainplan.multichain/v1", "branches": [
 {"input_bytes": 4, "stages": [
  {"fwd_time": 1, "bwd_time": 2, "out_bytes": 4, "saved_bytes": 8, "fwd_tmp_bytes": 0, "bwd_tmp_bytes": 1},
  {"fwd_time": 1, "bwd_time": 2, "out_bytes": 2, "saved_bytes": 4, "fwd_tmp_bytes": 0, "bwd_tmp_bytes": 1}]},
 {"input_bytes": 2, "stages": [
  {"fwd_time": 2, "bwd_time": 1, "out_bytes": 2, "saved_bytes": 2, "fwd_tmp_bytes": 1, "bwd_tmp_bytes": 0}]}],
 "loss": {"fwd_time": 1, "bwd_time": 1, "fwd_tmp_bytes": 0, "bwd_tmp_bytes": 2}}`

func TestSolveMultichain(t *testing.T) {
	out, err := SolveMultichain(twoTowers, `{"algo": "multichain", "min_budget": true}`)
	if err != nil {
		t.Fatal(err)
	}
	p, err := chainplan.ParsePlan([]byte(out))
	if err != nil || p.Multichain == nil || p.Multichain.Branches != 2 || p.Algo != "multichain" {
		t.Fatalf("plan %s, %v", out, err)
	}
	for req, prefix := range map[string]string{
		`{"algo": "multichain", "budget_bytes": 1}`: "chainplan[infeasible;min_budget_bytes=",
		`{"algo": "rotor", "budget_bytes": 100}`:    "chainplan[bad-request]: unsupported request: algorithm \"rotor\" plans one chain",
	} {
		if _, err := SolveMultichain(twoTowers, req); err == nil || !strings.HasPrefix(err.Error(), prefix) {
			t.Errorf("%s: %v, want %q", req, err, prefix)
		}
	}
	if _, err := SolveMultichain(`{"format": "chainplan.multichain/v1", "branches": []}`, `{"algo": "multichain", "budget_bytes": 10}`); err == nil ||
		!strings.HasPrefix(err.Error(), "chainplan[invalid-chain]") || !strings.Contains(err.Error(), "K = 0") {
		t.Fatalf("K = 0: %v", err)
	}
}
