package pipeplan_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/pipeplan"
)

// TestParseRefusesOtherVersions: a pipeline plan of a version this chainplan does not
// read is refused by its tag, before its fields (which that version may have changed) are
// looked at; a document of another kind is refused by its tag too (issue 33).
func TestParseRefusesOtherVersions(t *testing.T) {
	newer := []byte(`{"format": "chainplan.pipeline/v2", "periods": [1, 2]}`)
	if !pipeplan.IsPipelinePlan(newer) {
		t.Error("IsPipelinePlan: a chainplan.pipeline/v2 document is a pipeline plan (of a version Parse refuses)")
	}
	_, err := pipeplan.Parse(newer)
	want := "format chainplan.pipeline/v2 is not supported (this chainplan reads chainplan.pipeline/v1)"
	if !errors.Is(err, chainplan.ErrSchemaVersion) || !errors.Is(err, chainplan.ErrInvalidPlan) || err.Error() != want {
		t.Errorf("Parse(v2) = %v, want %q", err, want)
	}
	_, err = pipeplan.Parse([]byte(`{"format": "chainplan.chain/v1", "input_bytes": 1}`))
	if errors.Is(err, chainplan.ErrSchemaVersion) || !errors.Is(err, chainplan.ErrInvalidPlan) ||
		!strings.Contains(err.Error(), "another kind of document") {
		t.Errorf("Parse(a chain) = %v", err)
	}
	if _, err := pipeplan.ReadPlan(t.TempDir()); !errors.Is(err, chainplan.ErrInputFile) {
		t.Errorf("ReadPlan(a directory) = %v, want ErrInputFile", err)
	}
}
