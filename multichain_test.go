package chainplan_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
)

const tower = `{"input_bytes": 8, "stages": [
	{"name": "s1", "fwd_time": 1, "bwd_time": 2, "out_bytes": 4, "saved_bytes": 6, "fwd_tmp_bytes": 0, "bwd_tmp_bytes": 1}]}`

func bundle(branches, extra string) string {
	return `{"format": "chainplan.multichain/v1", "branches": [` + branches + `],
		"loss": {"fwd_time": 0.5, "bwd_time": 0.25, "fwd_tmp_bytes": 3, "bwd_tmp_bytes": 5}` + extra + `}`
}

func TestParseMultiChain(t *testing.T) {
	m, err := chainplan.ParseMultiChain([]byte(bundle(tower+`, {"format": "chainplan.chain/v1", "input_bytes": 2, "stages": []}`,
		`, "keep_input_grad": [false, true]`)))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.Lengths(), []int{1, 0}; got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("lengths %v, want %v", got, want)
	}
	if m.Keep(1) || !m.Keep(2) || m.Loss.BwdTmpBytes != 5 || m.Branches[1].InputBytes != 2 {
		t.Fatalf("decoded %+v", m)
	}
	if got, want := m.SumTime(), 3.75; got != want {
		t.Fatalf("SumTime %v, want %v", got, want)
	}
	// MarshalIndent writes what ParseMultiChain reads back.
	b, err := m.MarshalIndent()
	if err != nil {
		t.Fatal(err)
	}
	back, err := chainplan.ParseMultiChain(b)
	if err != nil {
		t.Fatalf("round trip: %v\n%s", err, b)
	}
	if !reflect.DeepEqual(back.Branches[0].Stages[0], m.Branches[0].Stages[0]) || back.Loss != m.Loss || !back.Keep(2) {
		t.Fatalf("round trip changed the bundle: %+v", back)
	}
	if !chainplan.IsMultiChain(b) || chainplan.IsMultiChain([]byte(`{"format": "chainplan.chain/v1"}`)) {
		t.Fatal("IsMultiChain does not tell a bundle from a chain")
	}
}

func TestParseMultiChainErrors(t *testing.T) {
	tests := []struct {
		name, doc string
		branch    int
		field     string
		msg       string
	}{
		{"no branches", bundle("", ""), 0, "branches", "K = 0"},
		{"branches missing", `{"format": "chainplan.multichain/v1"}`, 0, "branches", "missing"},
		{"own loss", bundle(tower+`, {"input_bytes": 1, "stages": [], "loss": {"fwd_time": 1}}`, ""), 2, "",
			"a branch has no loss of its own"},
		{"stage field", bundle(strings.Replace(tower, `"out_bytes": 4`, `"out_bytes": -4`, 1), ""), 1, "out_bytes", "negative"},
		{"missing field", bundle(strings.Replace(tower, `"bwd_time": 2, `, ``, 1), ""), 1, "bwd_time", "missing"},
		{"keep length", bundle(tower, `, "keep_input_grad": [true, false]`), 0, "keep_input_grad", "2 values for 1 branches"},
		{"loss field", strings.Replace(bundle(tower, ""), `"fwd_tmp_bytes": 3`, `"fwd_tmp_bytes": 3.5`, 1), 0,
			"fwd_tmp_bytes", "whole number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := chainplan.ParseMultiChain([]byte(tt.doc))
			var ce *chainplan.ChainError
			if !errors.As(err, &ce) || !errors.Is(err, chainplan.ErrInvalidChain) {
				t.Fatalf("error %v, want a ChainError", err)
			}
			if ce.Branch != tt.branch || ce.Field != tt.field || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("error %q (branch %d, field %q), want branch %d, field %q, containing %q",
					err, ce.Branch, ce.Field, tt.branch, tt.field, tt.msg)
			}
		})
	}
	if _, err := chainplan.ParseMultiChain([]byte(`{"format": "chainplan.multichain/v1", "branches": [], "extra": 1}`)); !errors.Is(err, chainplan.ErrInvalidChain) || !strings.Contains(err.Error(), "extra") {
		t.Fatalf("unknown field: %v", err)
	}
}

func TestChainErrorNamesTheBranch(t *testing.T) {
	err := &chainplan.ChainError{Branch: 2, Stage: 3, Name: "fc", Field: "out_bytes", Msg: "negative value -1"}
	if got, want := err.Error(), `invalid chain: branch 2: stage 3 ("fc"): field "out_bytes": negative value -1`; got != want {
		t.Fatalf("%q, want %q", got, want)
	}
	err = &chainplan.ChainError{Branch: 1, Field: "input_bytes", Msg: "missing"}
	if got, want := err.Error(), `invalid chain: branch 1: field "input_bytes": missing`; got != want {
		t.Fatalf("%q, want %q", got, want)
	}
}

func TestParseLoss(t *testing.T) {
	l, err := chainplan.ParseLoss([]byte(`{"fwd_time": 0.5, "bwd_tmp_bytes": 7}`))
	if err != nil || l != (chainplan.Loss{FwdTime: 0.5, BwdTmpBytes: 7}) {
		t.Fatalf("ParseLoss = %+v, %v", l, err)
	}
	for _, doc := range []string{`{"fwd_time": -1}`, `{"speed": 1}`, `[1]`, `{"bwd_tmp_bytes": 0.5}`} {
		if _, err := chainplan.ParseLoss([]byte(doc)); !errors.Is(err, chainplan.ErrInvalidChain) {
			t.Errorf("ParseLoss(%s) = %v, want ErrInvalidChain", doc, err)
		}
	}
}

// TestMultichainOpJSON: operations of a chain keep their two fields; those of a multichain
// plan carry their branch, the joint loss its branch 0.
func TestMultichainOpJSON(t *testing.T) {
	ops := []chainplan.Op{{Kind: chainplan.FCk, Stage: 2}, {Kind: chainplan.FAll, Branch: 2, Stage: 1},
		{Kind: chainplan.B}, {Kind: chainplan.FreeGrad, Branch: 1}}
	b, err := json.Marshal(ops)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"op":"F_ck","stage":2},{"op":"F_all","branch":2,"stage":1},{"op":"B","branch":0,"stage":0},` +
		`{"op":"free_grad","branch":1,"stage":0}]`
	if string(b) != want {
		t.Fatalf("%s\nwant %s", b, want)
	}
	var back []chainplan.Op
	if err := json.Unmarshal(b, &back); err != nil || len(back) != 4 || back[1] != ops[1] || back[3] != ops[3] {
		t.Fatalf("round trip %v, %v", back, err)
	}
	if got := chainplan.FormatSequence(ops); got != "F_ck 2, F_all 2.1, B loss, free_grad 1" {
		t.Fatalf("FormatSequence = %q", got)
	}
}

func TestParseMultichainPlan(t *testing.T) {
	plan := func(section, seq string) string {
		return `{"algo": "multichain", "feasible": true, "multichain": ` + section + `, "sequence": [` + seq + `]}`
	}
	const sec = `{"branches": 2, "keep_input_grad": [false, false], "unit_bytes": 4, "reserve_bytes": 9,
		"decisions": [{"branch": 2, "steps": 1}]}`
	good := `{"op": "F_ck", "branch": 2, "stage": 1}, {"op": "F_all", "branch": 0, "stage": 0}, {"op": "free_grad", "branch": 1, "stage": 0}`
	p, err := chainplan.ParsePlan([]byte(plan(sec, good)))
	if err != nil {
		t.Fatal(err)
	}
	if p.Multichain.Branches != 2 || p.Sequence[0].Branch != 2 || p.Multichain.Decisions[0].Steps != 1 {
		t.Fatalf("decoded %+v", p)
	}
	for _, tt := range []struct{ section, seq, want string }{
		{sec, `{"op": "F_ck", "branch": 3, "stage": 1}`, "branch 3 out of range"},
		{sec, `{"op": "F_ck", "branch": 0, "stage": 0}`, "the joint loss is F_all or B"},
		{sec, `{"op": "free_grad", "branch": 0, "stage": 0}`, "free_grad names a branch"},
		{sec, `{"op": "B", "branch": 1, "stage": 0}`, "numbered from 1"},
		{sec, `{"op": "D", "branch": 1, "stage": 1}`, "unknown op"},
		{`{"branches": 2, "keep_input_grad": [true]}`, ``, "keep_input_grad has 1 values"},
		{`{"branches": 2, "keep_input_grad": [true, true], "order": [1, 1]}`, ``, "not a permutation"},
		{`{"branches": 0, "keep_input_grad": []}`, ``, "at least 1"},
	} {
		if _, err := chainplan.ParsePlan([]byte(plan(tt.section, tt.seq))); !errors.Is(err, chainplan.ErrInvalidPlan) ||
			!strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s %s: %v, want an error containing %q", tt.section, tt.seq, err, tt.want)
		}
	}
	// A branch in a plan without the section is refused.
	if _, err := chainplan.ParsePlan([]byte(`{"algo": "rotor", "sequence": [{"op": "B", "branch": 1, "stage": 1}]}`)); !errors.Is(err, chainplan.ErrInvalidPlan) {
		t.Fatalf("branch outside a multichain plan: %v", err)
	}
}

// FuzzParseMultiChain checks that the bundle parser never panics and that whatever it
// accepts is a valid bundle that survives a round trip.
func FuzzParseMultiChain(f *testing.F) {
	f.Add([]byte(bundle(tower+`, {"input_bytes": 2, "stages": []}`, `, "keep_input_grad": [false, true]`)))
	f.Add([]byte(bundle("", "")))
	f.Add([]byte(`{"format": "chainplan.multichain/v1", "branches": [{"input_bytes": 1, "stages": [], "loss": {"fwd_time": 1}}]}`))
	f.Add([]byte(`{"format": "chainplan.multichain/v1", "branches": [3]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := chainplan.ParseMultiChain(data)
		if err != nil {
			if !errors.Is(err, chainplan.ErrInvalidChain) {
				t.Fatalf("error %v is not ErrInvalidChain", err)
			}
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("accepted an invalid bundle: %v", err)
		}
		b, err := m.MarshalIndent()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := chainplan.ParseMultiChain(b); err != nil {
			t.Fatalf("round trip of an accepted bundle fails: %v\n%s", err, b)
		}
	})
}
