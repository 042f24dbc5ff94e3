package launch_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chainplan/chainplan/planner/launch"
)

// The JSON the launcher reads: these exact field names, a budget as a number and "none".
func TestShapeJSON(t *testing.T) {
	s := launch.Shape{Mesh: launch.Mesh{PP: 2, DP: 2, TP: 1}, Microbatch: 1, Microbatches: 8, Cuts: []int{3},
		Checkpoint: []launch.Checkpoint{launch.None, {BudgetBytes: 1 << 20}}}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"mesh":{"pp":2,"dp":2,"tp":1},"microbatch":1,"microbatches":8,"cuts":[3],"checkpoint":["none",1048576]}`
	if string(b) != want {
		t.Fatalf("got %s\nwant %s", b, want)
	}
	var back launch.Shape
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Checkpoint[0] != launch.None || back.Checkpoint[1].BudgetBytes != 1<<20 || back.Mesh.Size() != 4 {
		t.Fatalf("round trip: %+v", back)
	}
	for _, bad := range []string{`"all"`, `0`, `-5`, `1.5`} {
		var c launch.Checkpoint
		if err := json.Unmarshal([]byte(bad), &c); err == nil || !strings.Contains(err.Error(), "checkpoint") {
			t.Errorf("checkpoint %s: error %v, want a refusal naming checkpoint", bad, err)
		}
	}
}

func TestShapeCheck(t *testing.T) {
	ok := launch.Shape{Mesh: launch.Mesh{PP: 3, DP: 1, TP: 1}, Microbatch: 2, Microbatches: 4, Cuts: []int{2, 4},
		Checkpoint: []launch.Checkpoint{launch.None, launch.None, launch.None}}
	if err := ok.Check(5); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		edit func(*launch.Shape)
		want string
	}{
		{func(s *launch.Shape) { s.Mesh.TP = 0 }, "mesh"},
		{func(s *launch.Shape) { s.Microbatch = 0 }, "microbatch"},
		{func(s *launch.Shape) { s.Microbatches = 0 }, "microbatches"},
		{func(s *launch.Shape) { s.Cuts = []int{2} }, "pp−1"},
		{func(s *launch.Shape) { s.Cuts = []int{2, 5} }, "within 1..4"},
		{func(s *launch.Shape) { s.Cuts = []int{3, 3} }, "increasing"},
		{func(s *launch.Shape) { s.Cuts = []int{0, 3} }, "increasing"},
		{func(s *launch.Shape) { s.Checkpoint = s.Checkpoint[:1] }, "checkpoint"},
	} {
		s := ok
		s.Cuts, s.Checkpoint = append([]int(nil), ok.Cuts...), append([]launch.Checkpoint(nil), ok.Checkpoint...)
		tt.edit(&s)
		if err := s.Check(5); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: error %v, want one naming %q", s, err, tt.want)
		}
	}
}
