package pybind

import (
	"encoding/json"
	"testing"

	"github.com/chainplan/chainplan/planner"
)

// TestAlgorithms checks the registry as Python receives it: every entry, in order, with
// the fields Python's request check reads.
func TestAlgorithms(t *testing.T) {
	s, err := Algorithms()
	if err != nil {
		t.Fatal(err)
	}
	var got []struct {
		Name     string   `json:"name"`
		Family   string   `json:"family"`
		Needs    []string `json:"needs"`
		Takes    []string `json:"takes"`
		Frontier bool     `json:"frontier"`
	}
	if err := json.Unmarshal([]byte(s), &got); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	want := planner.Entries()
	if len(got) != len(want) {
		t.Fatalf("%d algorithms, want %d: %s", len(got), len(want), s)
	}
	for i, e := range want {
		if g := got[i]; g.Name != e.Name || g.Family != string(e.Family) || len(g.Needs) != len(e.Needs) || len(g.Takes) != len(e.Takes) {
			t.Errorf("entry %d: %+v, want %s", i, g, e.Name)
		}
	}
}
