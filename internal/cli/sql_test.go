package cli

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestSQLFormats(t *testing.T) {
	db := filepath.Join(t.TempDir(), "q.db")
	mustIngest(t, db, testdataFile("resnet_file.arrow"))
	const q = "SELECT stage_index, stage_name, fwd_time_s, saved_bytes, NULL AS missing, x'00ff' AS blob " +
		"FROM stages WHERE run_id = ? AND stage_index <= ? ORDER BY stage_index"
	code, out, errs := runDB(t, db, "sql", q, "1", "2")
	if code != 0 {
		t.Fatalf("table: exit %d: %s", code, errs)
	}
	if !strings.HasPrefix(out, "stage_index  stage_name  fwd_time_s") || !strings.Contains(out, "conv1") ||
		!strings.Contains(out, "NULL") || !strings.Contains(out, "x'00ff'") || !strings.HasSuffix(out, "(2 rows)\n") {
		t.Fatalf("table:\n%s", out)
	}
	code, out, _ = runDB(t, db, "sql", "--format", "csv", q, "1", "2")
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if code != 0 || err != nil || len(recs) != 3 || recs[1][1] != "conv1" || recs[1][3] != "4194304" || recs[1][4] != "" ||
		recs[1][5] != `\x00ff` {
		t.Fatalf("csv: exit %d, %v\n%s", code, err, out)
	}
	code, out, _ = runDB(t, db, "sql", "--format", "json", q, "1", "2")
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); code != 0 || err != nil {
		t.Fatalf("json: exit %d, %v\n%s", code, err, out)
	}
	if len(rows) != 2 || rows[0]["stage_name"] != "conv1" || rows[0]["saved_bytes"] != 4194304.0 || rows[0]["missing"] != nil ||
		rows[1]["fwd_time_s"].(float64) <= 0 || rows[0]["blob"] != "AP8=" {
		t.Fatalf("json rows %v", rows)
	}
	code, out, _ = runDB(t, db, "sql", "--format", "json", "SELECT 1 WHERE 0")
	if code != 0 || out != "[]\n" {
		t.Fatalf("empty json: exit %d %q", code, out)
	}
	arrowPath := filepath.Join(t.TempDir(), "out.arrow")
	if code, _, errs := runDB(t, db, "sql", "--format", "arrow", "-o", arrowPath, q, "1", "2"); code != 0 {
		t.Fatalf("arrow: exit %d: %s", code, errs)
	}
	data, err := os.ReadFile(arrowPath)
	if err != nil || !strings.HasPrefix(string(data), "ARROW1") || !strings.HasSuffix(string(data), "ARROW1") {
		t.Fatalf("arrow output is not an Arrow IPC file (%v)", err)
	}
	checkWithPyarrow(t, arrowPath)
}

// checkWithPyarrow reads the Arrow output of TestSQLFormats with pyarrow, when the
// project's virtual environment is there.
func checkWithPyarrow(t *testing.T, path string) {
	py := "../../.venv/bin/python"
	if _, err := os.Stat(py); err != nil {
		t.Log("no .venv/bin/python: pyarrow check skipped")
		return
	}
	script := `
import sys, pyarrow.feather as f
t = f.read_table(sys.argv[1])
assert t.num_rows == 2, t.num_rows
assert str(t.schema.field("stage_index").type) == "int64"
assert str(t.schema.field("stage_name").type) == "string"
assert str(t.schema.field("fwd_time_s").type) == "double"
assert str(t.schema.field("missing").type) == "null"
assert str(t.schema.field("blob").type) == "binary"
assert t.column("stage_name").to_pylist() == ["conv1", "layer1"]
assert t.column("blob").to_pylist() == [b"\x00\xff", b"\x00\xff"]
`
	out, err := exec.Command(py, "-c", script, path).CombinedOutput()
	if err != nil {
		t.Fatalf("pyarrow cannot read the Arrow output: %v\n%s", err, out)
	}
}

func TestSQLReadOnly(t *testing.T) {
	db := filepath.Join(t.TempDir(), "ro.db")
	mustIngest(t, db, testdataFile("resnet_file.arrow"))
	before, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"DELETE FROM runs",
		"UPDATE stages SET fwd_time_s = 0",
		"INSERT INTO plans (run_id) VALUES (1)",
		"DROP TABLE measurements",
		"PRAGMA user_version = 7",
		"CREATE TEMP VIEW v AS SELECT 1",
		"ATTACH DATABASE '" + filepath.Join(t.TempDir(), "x.db") + "' AS x",
	} {
		code, out, errs := runDB(t, db, "sql", q)
		if code != exitBadInput || !strings.Contains(errs, "read-only") || out != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and a read-only refusal", q, code, out, errs)
		}
	}
	code, out, _ := runDB(t, db, "sql", "--format", "csv", "SELECT count(*) FROM measurements")
	if code != 0 || out != "count(*)\n35\n" {
		t.Fatalf("after the refusals: exit %d %q", code, out)
	}
	after, err := os.ReadFile(db)
	if err != nil || string(after) != string(before) {
		t.Fatalf("the database file changed (%v)", err)
	}
}

// TestSQLBindsArguments: each ARG binds one placeholder, $N the Nth; a trailing ";" and
// a comment are fine.
func TestSQLBindsArguments(t *testing.T) {
	db := filepath.Join(t.TempDir(), "args.db")
	mustIngest(t, db, testdataFile("resnet_file.arrow"))
	for _, args := range [][]string{
		{"SELECT run_id, $2 AS tag FROM runs WHERE run_id = $1; -- the first run", "1", "x"},
		{"SELECT run_id, ? AS tag FROM runs WHERE run_id = ?;", "x", "1"},
	} {
		code, out, errs := runDB(t, db, append([]string{"sql", "--format", "csv"}, args...)...)
		if code != 0 || out != "run_id,tag\n1,x\n" {
			t.Errorf("sql %q: exit %d, %q %s", args, code, out, errs)
		}
	}
}

func TestSQLBadInput(t *testing.T) {
	db := filepath.Join(t.TempDir(), "bad.db")
	mustIngest(t, db, testdataFile("resnet_file.arrow"))
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"sql"}, "sql needs a QUERY"},
		{[]string{"sql", "SELEC 1"}, "syntax error"},
		{[]string{"sql", "SELECT * FROM nowhere"}, "no such table"},
		{[]string{"sql", "SELECT ?"}, "bad query"},
		// One statement, each argument bound (issue 33: both statements ran and the last
		// printed; an extra argument was ignored).
		{[]string{"sql", "SELECT 1; SELECT 2"}, "the query holds several statements; run one at a time"},
		{[]string{"sql", "SELECT 1; DELETE FROM runs"}, "several statements"},
		{[]string{"sql", "SELECT 1", "5"}, "the statement has 0 placeholders and 1 argument given"},
		{[]string{"sql", "SELECT run_id FROM runs WHERE run_id = $1 AND model_name = $2", "1"},
			"the statement has 2 placeholders and 1 argument given"},
		{[]string{"sql", "--format", "xml", "SELECT 1"}, "unknown --format"},
	} {
		code, _, errs := runDB(t, db, tt.args...)
		if code != exitBadInput || !strings.Contains(errs, tt.want) {
			t.Errorf("%v: exit %d, %q; want exit 2 and %q", tt.args, code, errs, tt.want)
		}
	}
}
