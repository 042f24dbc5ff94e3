package pybind

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
)

// exampleA returns the small heterogeneous test vector of rotor spec §4.7.
func exampleA(*testing.T) string {
	return `{"format": "chainplan.chain/v1", "input_bytes": 2, "stages": [
 {"name": "s1", "fwd_time": 2, "bwd_time": 3, "out_bytes": 4, "saved_bytes": 6, "fwd_tmp_bytes": 1, "bwd_tmp_bytes": 1},
 {"name": "s2", "fwd_time": 3, "bwd_time": 4, "out_bytes": 3, "saved_bytes": 8, "fwd_tmp_bytes": 0, "bwd_tmp_bytes": 1},
 {"name": "s3", "fwd_time": 1, "bwd_time": 2, "out_bytes": 5, "saved_bytes": 7, "fwd_tmp_bytes": 2, "bwd_tmp_bytes": 0}],
 "loss": {"fwd_time": 0, "bwd_time": 1, "fwd_tmp_bytes": 0, "bwd_tmp_bytes": 1}}`
}

// TestPlanChain: Plan on a chain as chainplan.plan(chain) sends it, at a budget and at the
// smallest one.
func TestPlanChain(t *testing.T) {
	out, err := planChain(exampleA(t), `{"algo": "rotor", "budget_bytes": 24, "slots": 24}`)
	if err != nil {
		t.Fatal(err)
	}
	var p chainplan.Plan
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	if p.Makespan != 21 || p.PeakBytes != 24 { // rotor spec §4.7
		t.Fatalf("plan %+v", p)
	}
	out, err = planChain(exampleA(t), `{"algo": "rotor", "slots": 30, "min_budget": true}`)
	if err != nil || !strings.Contains(out, `"budget_bytes":22`) {
		t.Fatalf("min_budget: %s, %v", out, err)
	}
	if b, err := MinBudget(callOf(chainSource(exampleA(t)), `{"algo": "rotor", "slots": 30}`)); err != nil || b != 22 {
		t.Fatalf("MinBudget = %d, %v", b, err)
	}
}

func TestErrorCodes(t *testing.T) {
	tests := []struct {
		chain, req, prefix string
	}{
		{exampleA(t), `{"budget_bytes": 21, "slots": 21}`, "chainplan[infeasible;min_budget_bytes=22]: rotor: budget 21 B"},
		{`{"format": "x"}`, `{}`, `chainplan[invalid-chain]: format x is not supported (this chainplan reads chainplan.chain/v1 or chainplan.chain/v2)`},
		{exampleA(t), `{"algo": "magic", "budget_bytes": 10}`, `chainplan[bad-request]: unsupported request: unknown algorithm "magic"`},
		{exampleA(t), `{"budget_bytes": "ten"}`, `chainplan[bad-request]: request: json: cannot unmarshal string`},
		// The name is checked before the bandwidth: "POFO" is not an offloading algorithm.
		{exampleA(t), `{"algo": "POFO", "budget_bytes": 30, "bandwidth": 1e9}`, `chainplan[bad-request]: unsupported request: unknown algorithm "POFO" (names are lower-case: did you mean "pofo"?`},
	}
	for _, tt := range tests {
		_, err := planChain(tt.chain, tt.req)
		if err == nil || !strings.HasPrefix(err.Error(), tt.prefix) {
			t.Errorf("Plan(%s) error %v, want prefix %q", tt.req, err, tt.prefix)
		}
	}
}

// TestParseSizes checks that Python reads sizes and bandwidths with the CLI's rule, and that
// a bad one is a bad request whose message says "bad request" once, in its code.
func TestParseSizes(t *testing.T) {
	if n, err := ParseBytes("2g"); err != nil || n != 2_000_000_000 {
		t.Errorf("ParseBytes(2g) = %d, %v", n, err)
	}
	if b, err := ParseBandwidth("1.5e3MB/s"); err != nil || b != 1.5e9 {
		t.Errorf("ParseBandwidth(1.5e3MB/s) = %v, %v", b, err)
	}
	for _, tt := range []struct {
		call func() error
		want string
	}{
		{func() error { _, err := ParseBytes("2XB"); return err }, `chainplan[bad-request]: byte size "2XB": unknown unit "XB"`},
		{func() error { _, err := ParseBytes("1.5"); return err }, `chainplan[bad-request]: byte size "1.5": not a whole number of bytes`},
		{func() error { _, err := ParseBandwidth("0/s"); return err }, `chainplan[bad-request]: bandwidth "0/s": must be a positive`},
	} {
		if err := tt.call(); err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("error %v, want prefix %q", err, tt.want)
		}
	}
}

func TestRecoverError(t *testing.T) {
	f := func() (err error) {
		defer recoverError(&err)
		panic("boom")
	}
	if err := f(); err == nil || !strings.HasPrefix(err.Error(), "chainplan[internal]: panic: boom") {
		t.Fatalf("got %v", err)
	}
}
