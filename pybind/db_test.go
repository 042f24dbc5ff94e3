package pybind

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/chainplan/chainplan/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// opened returns how many databases the process has opened so far.
func opened() int {
	dbs.Lock()
	defer dbs.Unlock()
	return dbs.opens
}

// Every call on one database after the first uses the database the first opened: the
// schema is checked and migrated once per process, not once per call. The same holds for
// a PostgreSQL store, known by its DSN.
func TestOneOpenPerDatabase(t *testing.T) {
	for _, db := range []string{filepath.Join(t.TempDir(), "chainplan.db"), pgtest.NewStore(t)} {
		oneOpenPerDatabase(t, db)
	}
}

func oneOpenPerDatabase(t *testing.T, db string) {
	t.Helper()
	profile := filepath.Join("..", "testdata", "profiles", "resnet_file.arrow")
	before := opened()
	if _, err := Ingest(dbOf(db), profile); err != nil {
		t.Fatal(err)
	}
	res, err := planRun(db, 1, `{"min_budget": true}`)
	if err != nil {
		t.Fatal(err)
	}
	var solved struct {
		PlanID int64 `json:"plan_id"`
	}
	if err := json.Unmarshal([]byte(res), &solved); err != nil {
		t.Fatal(err)
	}
	calls := []func() error{
		func() error { _, err := Query(dbOf(db), "SELECT count(*) FROM plans", ""); return err },
		func() error { _, err := Run(dbOf(db), 1); return err },
		func() error { _, err := Runs(dbOf(db), `{}`); return err },
		func() error { _, err := Chain(callOf(runSource(db, 1), `{}`)); return err },
		func() error {
			_, err := RecordExecution(dbOf(db), solved.PlanID, `{"step_time_s": 1, "peak_bytes": 1, "steps": 1}`)
			return err
		},
		func() error { _, err := LatestBandwidth(dbOf(db), 1); return err },
		func() error { _, err := Ingest(dbOf(db), profile); return err },
	}
	for i, call := range calls {
		if err := call(); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if n := opened() - before; n != 1 {
		t.Fatalf("%d calls opened the database %d times, want once", len(calls)+2, n)
	}
}

// Concurrent calls on one database share it: it is opened once, and each plan is
// recorded once under its own id.
func TestConcurrentCalls(t *testing.T) {
	db := filepath.Join(t.TempDir(), "chainplan.db")
	if _, err := Ingest(dbOf(db), filepath.Join("..", "testdata", "profiles", "resnet_file.arrow")); err != nil {
		t.Fatal(err)
	}
	before := opened()
	const n = 16
	ids := make([]int, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			res, err := planRun(db, 1, fmt.Sprintf(`{"budget_bytes": %d, "algo": "store-all"}`, 1<<40))
			if err != nil {
				errs[i] = err
				return
			}
			var solved struct {
				PlanID int `json:"plan_id"`
			}
			errs[i] = json.Unmarshal([]byte(res), &solved)
			ids[i] = solved.PlanID
			if _, err := Query(dbOf(db), "SELECT count(*) FROM plans", ""); err != nil {
				errs[i] = err
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	sort.Ints(ids)
	for i, id := range ids {
		if id != i+1 {
			t.Fatalf("plan ids %v, want 1..%d", ids, n)
		}
	}
	if got := opened() - before; got != 0 {
		t.Fatalf("concurrent calls opened the database %d more times", got)
	}
}

// A database file removed behind the process's back is not served from the open handle:
// a read finds no database, and an ingest makes a new one.
func TestRemovedDatabaseReopens(t *testing.T) {
	db := filepath.Join(t.TempDir(), "chainplan.db")
	profile := filepath.Join("..", "testdata", "profiles", "resnet_file.arrow")
	if _, err := Ingest(dbOf(db), profile); err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(db + suffix); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	if _, err := Run(dbOf(db), 1); err == nil || !strings.HasPrefix(err.Error(), "chainplan[not-found]: no database") {
		t.Fatalf("Run on a removed database: %v", err)
	}
	before := opened()
	out, err := Ingest(dbOf(db), profile)
	if err != nil || !strings.Contains(out, `"existing":false`) || opened()-before != 1 {
		t.Fatalf("Ingest into the new file: %s, %v (%d opens)", out, err, opened()-before)
	}
}

// Beyond maxOpen databases the least recently used one is closed, but not while a call
// is using it.
func TestEvictionWaitsForUsers(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	first := filepath.Join(dir, "first.db")
	h, err := acquire(ctx, first, true)
	if err != nil {
		t.Fatal(err)
	}
	for i := range maxOpen {
		if _, err := Query(dbOf(filepath.Join(dir, fmt.Sprintf("%d.db", i))), "SELECT 1", ""); err == nil {
			t.Fatal("Query created a database")
		}
		if _, err := Ingest(dbOf(filepath.Join(dir, fmt.Sprintf("%d.db", i))), filepath.Join("..", "testdata", "profiles", "resnet_file.arrow")); err != nil {
			t.Fatal(err)
		}
	}
	dbs.Lock()
	_, still := dbs.open[first]
	size := len(dbs.open)
	dbs.Unlock()
	if still || !h.gone || size > maxOpen {
		t.Fatalf("after %d more databases: first still open %v, gone %v, %d open", maxOpen, still, h.gone, size)
	}
	if _, err := h.svc.Store().Query(ctx, "SELECT 1"); err != nil {
		t.Fatalf("an evicted database in use was closed: %v", err)
	}
	release(h)
	if _, err := h.svc.Store().Query(ctx, "SELECT 1"); err == nil {
		t.Fatal("an evicted database stayed open after its last user")
	}
	before := opened()
	if _, err := Query(dbOf(first), "SELECT 1", ""); err != nil || opened()-before != 1 {
		t.Fatalf("reopening the evicted database: %v, %d opens", err, opened()-before)
	}
}

func TestDataDir(t *testing.T) {
	for db, want := range map[string]string{"/data/lab.db": "/data", "postgres://db.lab/x": "/home/u/.chainplan",
		"host=db.lab password=PW dbname=x": "/home/u/.chainplan"} {
		if got, err := DataDir(`{"db_env": ` + jsonString(db) + `, "home": "/home/u"}`); err != nil || got != want {
			t.Errorf("DataDir(%q) = %q, %v; want %q", db, got, err, want)
		}
	}
	if _, err := DataDir(`{"db_env": "postgres://db.lab/x"}`); err == nil || !strings.HasPrefix(err.Error(), "chainplan[bad-request]") {
		t.Errorf("DataDir without a home: %v, want a coded bad request", err)
	}
	for _, call := range []func() (string, error){
		func() (string, error) { return DataDir(`{"db_env": "my dir/a=1 password=PW", "home": "/home/u"}`) },
		func() (string, error) { return Run(`{"db_env": "my dir/a=1 password=PW", "home": "/home/u"}`, 1) },
	} {
		if got, err := call(); err == nil || !strings.HasPrefix(err.Error(), "chainplan[bad-request]") || strings.Contains(err.Error(), "PW") {
			t.Errorf("neither a DSN nor a path: %q, %v; want a coded bad request without the password", got, err)
		}
	}
}
