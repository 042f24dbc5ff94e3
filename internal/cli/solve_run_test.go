package cli

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
)

func TestSolveRun(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	mustIngest(t, db, testdataFile("resnet_file.arrow"), testdataFile("record_mlp.arrow"))
	code, out, errs := runDB(t, db, "solve", "--run", "1", "--budget", "min", "--slots", "200")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(errs, "recorded as plan 1 of run 1") {
		t.Fatalf("stderr %q does not name the recorded plan", errs)
	}
	var fromRun chainplan.Plan
	if err := json.Unmarshal([]byte(out), &fromRun); err != nil || !fromRun.Feasible || len(fromRun.Sequence) == 0 {
		t.Fatalf("output is not a feasible plan (%v):\n%s", err, out)
	}
	// The same plan as solving the exported chain.
	_, chainJSON, _ := runDB(t, db, "export", "1")
	chainFile := filepath.Join(dir, "c.json")
	if err := os.WriteFile(chainFile, []byte(chainJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = run(t, "solve", "--chain", chainFile, "--budget", "min", "--slots", "200")
	var fromChain chainplan.Plan
	if err := json.Unmarshal([]byte(out), &fromChain); code != 0 || err != nil {
		t.Fatalf("solve --chain: exit %d %v %s", code, err, errs)
	}
	fromRun.SolveMS, fromChain.SolveMS = 0, 0
	if !reflect.DeepEqual(fromRun, fromChain) {
		t.Fatalf("solve --run and solve --chain of the exported chain differ:\n%+v\n%+v", fromRun, fromChain)
	}
	// What was recorded is the plan printed.
	code, out, _ = runDB(t, db, "sql", "--format", "csv", "SELECT run_id, algo, feasible, budget_bytes, slots, peak_bytes, "+
		"makespan_s, num_ops, json_extract(params_json, '$.budget'), sequence_json FROM plans")
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if code != 0 || err != nil || len(recs) != 2 {
		t.Fatalf("plans: exit %d %v\n%s", code, err, out)
	}
	r := recs[1]
	var seq []chainplan.Op
	if err := json.Unmarshal([]byte(r[9]), &seq); err != nil || !reflect.DeepEqual(seq, fromChain.Sequence) {
		t.Fatalf("recorded sequence %s differs (%v)", r[9], err)
	}
	if r[0] != "1" || r[1] != "rotor" || r[2] != "1" || r[4] != "200" || r[8] != "min" || r[7] != strconv.Itoa(len(seq)) {
		t.Fatalf("recorded plan row %v", r)
	}
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"solve", "--run", "1", "--chain", chainFile, "--budget", "1GiB"}, exitBadInput, "mutually exclusive"},
		{[]string{"solve", "--run", "9", "--budget", "1GiB"}, exitBadInput, "no run 9"},
		{[]string{"solve", "--run", "2", "--budget", "1GiB"}, exitBadInput, `"saved_bytes": not measured`},
		{[]string{"solve", "--run", "1", "--budget", "1"}, exitInfeasible, "smallest feasible budget"},
	} {
		code, _, errs := runDB(t, db, tt.args...)
		if code != tt.code || !strings.Contains(errs, tt.want) {
			t.Errorf("%v: exit %d, %q; want exit %d and %q", tt.args, code, errs, tt.code, tt.want)
		}
	}
	// Failed solves record nothing.
	if _, out, _ := runDB(t, db, "sql", "--format", "csv", "SELECT count(*) FROM plans"); out != "count(*)\n1\n" {
		t.Fatalf("plans after failures: %q", out)
	}
}
