package chainplan_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
)

func TestCheckFormat(t *testing.T) {
	if err := chainplan.CheckFormat(chainplan.ChainFormatV2, chainplan.ErrInvalidChain, chainplan.ChainFormat, chainplan.ChainFormatV2); err != nil {
		t.Fatalf("a tag the reader takes: %v", err)
	}
	tests := []struct {
		got, want string
		newer     bool
	}{
		{"chainplan.schedule/v7", "format chainplan.schedule/v7 is not supported (this chainplan reads chainplan.schedule/v1 (+offload, +multichain))", true},
		{"chainplan.schedule/v2+offload", "format chainplan.schedule/v2+offload is not supported (this chainplan reads chainplan.schedule/v1 (+offload, +multichain))", true},
		{"chainplan.chain/v1", "format chainplan.chain/v1 is not supported (this chainplan reads chainplan.schedule/v1 (+offload, +multichain)); it is another kind of document", false},
		{"", `format "" is not supported (this chainplan reads chainplan.schedule/v1 (+offload, +multichain)); it is another kind of document`, false},
		{"x\ny", `format "x\ny" is not supported`, false},
	}
	for _, tt := range tests {
		err := chainplan.CheckFormat(tt.got, chainplan.ErrInvalidPlan,
			chainplan.ScheduleFormat, chainplan.ScheduleFormatOffload, chainplan.ScheduleFormatMultichain)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("CheckFormat(%q) = %v, want %q", tt.got, err, tt.want)
			continue
		}
		if errors.Is(err, chainplan.ErrSchemaVersion) != tt.newer || !errors.Is(err, chainplan.ErrInvalidPlan) {
			t.Errorf("CheckFormat(%q): ErrSchemaVersion %v (want %v), ErrInvalidPlan %v",
				tt.got, errors.Is(err, chainplan.ErrSchemaVersion), tt.newer, errors.Is(err, chainplan.ErrInvalidPlan))
		}
	}
	if !chainplan.SameKind("chainplan.pipeline/v7", "chainplan.pipeline/v1") || chainplan.SameKind("chainplan.chain/v1", "chainplan.pipeline/v1") ||
		chainplan.SameKind("other/v1", "other/v1") {
		t.Error("SameKind")
	}
}

// TestReadersRefuseUnknownVersions: each reader of the root package refuses a document of
// a version it does not read by its tag, before it looks at fields that version may have
// changed (issue 33: a chainplan.schedule/v7 plan was simulated).
func TestReadersRefuseUnknownVersions(t *testing.T) {
	plan := `{"format": "chainplan.schedule/v7", "algo": "rotor", "feasible": true, "sequence": [{"op": "F_all", "stage": 1}, {"op": "B", "stage": 1}]}`
	chain := `{"format": "chainplan.chain/v9", "input": 3, "stages": {"a": 1}}`
	bundle := `{"format": "chainplan.multichain/v2", "towers": []}`
	branch := `{"format": "chainplan.multichain/v1", "branches": [{"format": "chainplan.chain/v2", "input_bytes": 1, "stages": []}]}`
	for _, tt := range []struct {
		name, want string
		read       func() error
	}{
		{"plan", "format chainplan.schedule/v7 is not supported (this chainplan reads chainplan.schedule/v1",
			func() error { _, err := chainplan.ParsePlan([]byte(plan)); return err }},
		{"chain", "format chainplan.chain/v9 is not supported (this chainplan reads chainplan.chain/v1 or chainplan.chain/v2)",
			func() error { _, err := chainplan.ParseChain([]byte(chain)); return err }},
		{"bundle", "format chainplan.multichain/v2 is not supported (this chainplan reads chainplan.multichain/v1)",
			func() error { _, err := chainplan.ParseMultiChain([]byte(bundle)); return err }},
		{"branch", "branch 1: format chainplan.chain/v2 is not supported (this chainplan reads chainplan.chain/v1)",
			func() error { _, err := chainplan.ParseMultiChain([]byte(branch)); return err }},
	} {
		err := tt.read()
		if !errors.Is(err, chainplan.ErrSchemaVersion) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want ErrSchemaVersion saying %q", tt.name, err, tt.want)
		}
	}
	// A plan without a tag is what the planners write, and reads.
	if _, err := chainplan.ParsePlan([]byte(strings.Replace(plan, `"format": "chainplan.schedule/v7", `, "", 1))); err != nil {
		t.Errorf("plan without a tag: %v", err)
	}
	// Reading a file names it.
	path := filepath.Join(t.TempDir(), "p.json")
	if err := os.WriteFile(path, []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := chainplan.ReadPlan(path); !errors.Is(err, chainplan.ErrSchemaVersion) || !strings.HasPrefix(err.Error(), "read plan "+path+": format chainplan.schedule/v7") {
		t.Errorf("ReadPlan: %v", err)
	}
}
