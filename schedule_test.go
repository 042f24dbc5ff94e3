package chainplan_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
)

func TestParsePlan(t *testing.T) {
	doc := `{"algo": "rotor", "feasible": true, "makespan": 41.0, "peak_bytes": 22,
 "budget_bytes": 22, "slots": 22, "solve_ms": 0.4,
 "sequence": [{"op": "F_ck", "stage": 1}, {"op": "F_none", "stage": 2},
              {"op": "F_all", "stage": 3}, {"op": "F_all", "stage": 4},
              {"op": "B", "stage": 4}, {"op": "B", "stage": 3}]}`
	p, err := chainplan.ParsePlan([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := chainplan.FormatSequence(p.Sequence), "F_ck 1, F_none 2, F_all 3, F_all 4, B 4, B 3"; got != want {
		t.Fatalf("sequence %q, want %q", got, want)
	}
	for _, bad := range []struct{ doc, msg string }{
		{`{"sequence": [{"op": "F_x", "stage": 1}]}`, `unknown op "F_x"`},
		{`{"sequence": [{"op": "B", "stage": 0}]}`, `stage 0`},
		{`{"algo": "rotor"}`, `"sequence" is missing`},
		{`{"sequence": 3}`, `not a valid`},
	} {
		_, err := chainplan.ParsePlan([]byte(bad.doc))
		if !errors.Is(err, chainplan.ErrInvalidPlan) || !strings.Contains(err.Error(), bad.msg) {
			t.Errorf("ParsePlan(%s) = %v, want ErrInvalidPlan containing %q", bad.doc, err, bad.msg)
		}
	}
}

func TestStoreAllSequence(t *testing.T) {
	got := chainplan.FormatSequence(chainplan.StoreAllSequence(2))
	if want := "F_all 1, F_all 2, F_all 3, B 3, B 2, B 1"; got != want {
		t.Fatalf("StoreAllSequence(2) = %q, want %q", got, want)
	}
}

func FuzzParsePlan(f *testing.F) {
	f.Add([]byte(`{"algo": "rotor", "sequence": [{"op": "F_all", "stage": 1}, {"op": "B", "stage": 1}]}`))
	f.Add([]byte(`{"sequence": []}`))
	// An offloading plan (docs/formats-schedule.md): its transfers' tensors and positions.
	f.Add([]byte(`{"algo": "pofo", "feasible": true, "makespan": 20, "peak_bytes": 21, "budget_bytes": 22,
		"sequence": [{"op": "F_ck", "stage": 1}, {"op": "F_all", "stage": 2}, {"op": "B", "stage": 2},
		{"op": "F_all", "stage": 1}, {"op": "B", "stage": 1}],
		"offload": {"bandwidth_bytes_per_s": 1, "memory_model": "fractional", "sync_at_loss": true,
		"offloaded_bytes": 2, "transfers": [{"dir": "offload", "tensor": "a0", "bytes": 2, "after": -1},
		{"dir": "prefetch", "tensor": "abar1", "bytes": 2, "before": 3}],
		"timing": {"compute_start": [0, 1, 3, 4, 6], "transfer_start": [0, 2]},
		"positions": [{"issue_after": -1, "release_after": 0}, {"issue_after": 2, "wait_before": 3}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := chainplan.ParsePlan(data)
		if err != nil {
			if !errors.Is(err, chainplan.ErrInvalidPlan) {
				t.Fatalf("error %v is not ErrInvalidPlan", err)
			}
			return
		}
		for _, o := range p.Sequence {
			if !o.Kind.Valid() || o.Stage < 1 {
				t.Fatalf("accepted a bad op %+v", o)
			}
		}
	})
}
