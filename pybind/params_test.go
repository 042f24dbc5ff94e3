package pybind

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/chainplan/chainplan/internal/cli"
)

// runDB runs the CLI on the database at db, as `chainplan --db db args...` would.
func runDB(t *testing.T, db string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errs bytes.Buffer
	code = cli.Run(context.Background(), append([]string{"--db", db}, args...), &out, &errs)
	return code, out.String(), errs.String()
}

// A plan of a stored run is recorded with one parameter set whichever front end asked:
// `chainplan solve --run` and the Python bindings (pybind.Plan) store the same
// params_json but for its "source".
func TestCLIAndBindingsRecordOneParameterSet(t *testing.T) {
	db := filepath.Join(t.TempDir(), "p.db")
	if _, err := Ingest(dbOf(db), "../testdata/profiles/resnet_file.arrow"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		cli    []string
		python string
	}{
		{[]string{"--budget", "min", "--slots", "200"}, `{"min_budget": true, "slots": 200}`},
		{[]string{"--budget", "min"}, `{"min_budget": true}`},
		{[]string{"--budget", "40MB", "--algo", "revolve"}, `{"budget_bytes": 40000000, "algo": "revolve"}`},
		{[]string{"--budget", "1GiB", "--algo", "sequential", "--segments", "3"},
			`{"budget_bytes": 1073741824, "algo": "sequential", "segments": 3}`},
		{[]string{"--budget", "min", "--algo", "sequential"}, `{"min_budget": true, "algo": "sequential"}`},
		{[]string{"--budget", "min", "--algo", "pofo", "--bandwidth", "12GB/s"},
			`{"min_budget": true, "algo": "pofo", "bandwidth": 12e9}`},
	}
	plan := 0
	for _, tt := range tests {
		args := append([]string{"solve", "--run", "1"}, tt.cli...)
		if code, _, errs := runDB(t, db, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		if _, err := planRun(db, 1, tt.python); err != nil {
			t.Fatalf("Plan(%s): %v", tt.python, err)
		}
		plan += 2
		cli, python := storedParams(t, db, plan-1), storedParams(t, db, plan)
		if cli["source"] != "cli" || python["source"] != "python" {
			t.Fatalf("sources %v and %v", cli["source"], python["source"])
		}
		delete(cli, "source")
		delete(python, "source")
		if !reflect.DeepEqual(cli, python) {
			t.Errorf("%v and %s stored different parameters:\n cli    %v\n python %v", tt.cli, tt.python, cli, python)
		}
		if len(cli) != 7 {
			t.Errorf("%v stored %d keys besides the source, want 7: %v", tt.cli, len(cli), cli)
		}
	}
}

// storedParams returns plan id's params_json.
func storedParams(t *testing.T, db string, id int) map[string]any {
	t.Helper()
	code, out, errs := runDB(t, db, "sql", "--format", "json", fmt.Sprintf("SELECT params_json FROM plans WHERE plan_id = %d", id))
	var rows []struct {
		Params string `json:"params_json"`
	}
	if code != 0 || json.NewDecoder(strings.NewReader(out)).Decode(&rows) != nil || len(rows) != 1 {
		t.Fatalf("plan %d: exit %d %s%s", id, code, out, errs)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(rows[0].Params), &m); err != nil {
		t.Fatal(err)
	}
	return m
}
