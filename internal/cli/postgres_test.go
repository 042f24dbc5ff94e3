package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chainplan/chainplan/internal/pgtest"
	"github.com/chainplan/chainplan/store"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// On a PostgreSQL store, chainplan sql reads, and refuses a write with exit status 2
// without changing anything: the database refuses it, as the reader role in a read-only
// transaction.
func TestSQLOnPostgres(t *testing.T) {
	dsn := pgtest.NewStore(t)
	mustIngest(t, dsn, testdataFile("resnet_file.arrow"))
	code, out, errs := runDB(t, dsn, "sql", "SELECT stage_name FROM stages WHERE run_id = $1 AND stage_index = $2", "1", "1")
	if code != 0 || !strings.Contains(out, "conv1") || !strings.HasSuffix(out, "(1 row)\n") {
		t.Fatalf("read: exit %d\n%s%s", code, out, errs)
	}
	for _, q := range []string{"DELETE FROM measurements", "UPDATE runs SET model_name = 'x'", "DROP TABLE plans",
		"DO $$ BEGIN RESET ROLE; DELETE FROM measurements; END $$"} {
		code, _, errs := runDB(t, dsn, "sql", q)
		if code != exitBadInput || !strings.Contains(errs, "read-only") {
			t.Errorf("%s: exit %d, want %d and a message saying the query is read-only: %s", q, code, exitBadInput, errs)
		}
	}
	code, out, _ = runDB(t, dsn, "sql", "--format", "json", "SELECT count(*) AS n, min(model_name) AS model FROM stage_history")
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); code != 0 || err != nil || len(rows) != 1 || rows[0]["n"].(float64) < 2 ||
		rows[0]["model"] != "resnet-mini" {
		t.Fatalf("after the refused writes: exit %d %v %s", code, err, out)
	}
	// Bad input names the problem: a DSN that does not parse, a store that does not exist.
	if code, _, errs := runDB(t, "postgres://u@h:notaport/x", "sql", "SELECT 1"); code != exitBadInput || !strings.Contains(errs, "DSN") {
		t.Errorf("bad DSN: exit %d: %s", code, errs)
	}
	missing := strings.Replace(dsn, "search_path=", "search_path=nothing_", 1)
	if code, _, errs := runDB(t, missing, "sql", "SELECT 1"); code != exitBadInput || !strings.Contains(errs, "no schema") {
		t.Errorf("missing store: exit %d: %s", code, errs)
	}
}

// migrate-store copies a local database into a PostgreSQL store and reports the counts;
// run twice, it copies nothing the second time; the plans stored by solve --run come
// along and are shown from the team store.
func TestMigrateStoreCommand(t *testing.T) {
	local := filepath.Join(t.TempDir(), "local.db")
	mustIngest(t, local, testdataFile("resnet_file.arrow"))
	if code, _, errs := runDB(t, local, "solve", "--run", "latest", "--budget", "min"); code != 0 {
		t.Fatalf("solve --run: exit %d: %s", code, errs)
	}
	dsn := pgtest.NewStore(t)
	withPassword := strings.Replace(dsn, pgtest.Role+"@", pgtest.Role+":s3cret@", 1) // trust authentication ignores it
	code, out, errs := run(t, "migrate-store", "--from", local, "--to", withPassword)
	if code != 0 || !strings.Contains(out, "copied 1 runs") || !strings.Contains(out, "1 plans") ||
		!strings.Contains(out, "skipped 0 runs") || strings.Contains(out+errs, "s3cret") {
		t.Fatalf("first copy: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = run(t, "migrate-store", "--from", local, "--to", dsn, "--format", "json")
	var stats store.CopyStats
	if err := json.Unmarshal([]byte(out), &stats); code != 0 || err != nil ||
		stats != (store.CopyStats{RunsSkipped: 1, PlansSkipped: 1}) {
		t.Fatalf("second copy: exit %d %v\n%s%s", code, err, out, errs)
	}
	if code, out, errs := runDB(t, dsn, "show-plan", "1"); code != 0 || !strings.Contains(out, "rotor") {
		t.Fatalf("show-plan from the team store: exit %d\n%s%s", code, out, errs)
	}
	for _, args := range [][]string{
		{"migrate-store", "--to", dsn},
		{"migrate-store", "--from", local},
		{"migrate-store", "--from", filepath.Join(t.TempDir(), "none.db"), "--to", dsn},
		{"migrate-store", "--from", local, "--to", local},
	} {
		if code, _, errs := run(t, args...); code != exitBadInput {
			t.Errorf("%v: exit %d, want %d: %s", args, code, exitBadInput, errs)
		}
	}
}
