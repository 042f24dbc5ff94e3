package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

func TestProfiles(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "p.db")
	var files []string
	for i := range 4 {
		model := []string{"alpha", "beta"}[i%2]
		files = append(files, writeProfile(t, dir, model+string(rune('0'+i))+".arrow", syntheticProfile(model, 3+i, 2, uint64(i))))
	}
	mustIngest(t, db, files...)
	tests := []struct {
		args []string
		want []int64 // run ids, newest first (syntheticProfile: later seeds are newer)
	}{
		{nil, []int64{4, 3, 2, 1}},
		{[]string{"--model", "beta"}, []int64{4, 2}},
		{[]string{"--limit", "1"}, []int64{4}},
		{[]string{"--model", "gamma"}, nil},
	}
	for _, tt := range tests {
		code, out, errs := runDB(t, db, append([]string{"profiles", "--format", "json"}, tt.args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", tt.args, code, errs)
		}
		var got []struct {
			RunID  int64   `json:"run_id"`
			Stages int     `json:"stages"`
			StepMS float64 `json:"step_ms"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%v: %v\n%s", tt.args, err, out)
		}
		if len(got) != len(tt.want) {
			t.Fatalf("%v: %d runs, want %v", tt.args, len(got), tt.want)
		}
		for i, r := range got {
			if r.RunID != tt.want[i] || r.Stages != 3+int(r.RunID)-1 || r.StepMS <= 0 {
				t.Fatalf("%v: run %d = %+v, want id %d", tt.args, i, r, tt.want[i])
			}
		}
	}
	code, out, _ := runDB(t, db, "profiles")
	if code != 0 || !strings.HasPrefix(out, "run_id  created_at") || !strings.Contains(out, "(4 rows)") ||
		!strings.Contains(out, "NVIDIA H100 80GB HBM3") {
		t.Fatalf("table: exit %d\n%s", code, out)
	}
	for _, args := range [][]string{{"profiles", "--limit", "-1"}, {"profiles", "extra"}, {"profiles", "--format", "arrow"}} {
		if code, _, _ := runDB(t, db, args...); code != exitBadInput {
			t.Errorf("%v: exit %d, want %d", args, code, exitBadInput)
		}
	}
}
