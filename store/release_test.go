package store_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner"
	"github.com/chainplan/chainplan/planner/simulate"
	"github.com/chainplan/chainplan/profile"
	"github.com/chainplan/chainplan/store"
)

// A database written by release 0.1 (schema version 2: testdata/store/release-0.1.db, one
// run and a rotor, a sequential and a pofo plan, made with that release's `chainplan
// ingest` and `solve --run`) opens, migrates forward, and replays its plans.
func TestReleaseDatabaseMigratesAndReplays(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chainplan.db")
	copyFile(t, "../testdata/store/release-0.1.db", path)
	ctx := context.Background()
	db, err := store.Open(ctx, path, store.Options{MustExist: true})
	if err != nil {
		t.Fatalf("open the release database: %v", err)
	}
	defer db.Close()
	plans, err := db.Plans(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(plans) != 3 {
		t.Fatalf("%d plans, want the release's 3", len(plans))
	}
	c, err := runChain(ctx, db, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range plans {
		if !p.Rebuilt {
			t.Errorf("plan %d (%s) not marked as rebuilt from its columns", p.ID, p.Plan.Algo)
		}
		if p.Plan.Offload != nil {
			t.Errorf("plan %d: an offload section appeared from nowhere", p.ID)
		}
		if p.Plan.Algo == "pofo" {
			continue // its transfers were never stored: its compute sequence alone overflows
		}
		rep := simulate.Replay(c, p.Plan.Sequence, p.Plan.BudgetBytes)
		if !rep.Valid || rep.Peak != p.Plan.PeakBytes || rep.Makespan != p.Plan.Makespan {
			t.Errorf("plan %d (%s): replay valid=%v peak %d makespan %g, stored peak %d makespan %g (%v)",
				p.ID, p.Plan.Algo, rep.Valid, rep.Peak, rep.Makespan, p.Plan.PeakBytes, p.Plan.Makespan, rep.Issues)
		}
	}
	// What migrates was not lost: the plans' columns are still there for SQL.
	rows, err := db.Query(ctx, "SELECT count(*) FROM plans WHERE json(sequence_json) = json_extract(plan_json, '$.sequence')")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	if !rows.Next() {
		t.Fatal("no row")
	}
	if n := rows.Values()[0]; n != int64(3) {
		t.Errorf("%v plans whose document carries their sequence, want 3", n)
	}
}

// runChain returns the chain of stored run id, as the service builds it.
func runChain(ctx context.Context, db *store.DB, id int64) (*chainplan.Chain, error) {
	stages, err := db.Stages(ctx, id)
	if err != nil {
		return nil, err
	}
	return profile.ChainOf(stages)
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

// An offloading plan keeps its whole document (transfers, timing, the chosen candidate):
// before migration 0003 only its sequence was stored.
func TestRecordPlanKeepsWholeDocument(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chainplan.db")
	copyFile(t, "../testdata/store/release-0.1.db", path)
	ctx := context.Background()
	db := mustOpen(t, path)
	c, err := runChain(ctx, db, 1)
	if err != nil {
		t.Fatal(err)
	}
	req := planner.Request{Algo: "pofo", Bandwidth: 12e9}
	min, err := planner.MinBudget(c, req)
	if err != nil {
		t.Fatal(err)
	}
	req.BudgetBytes = min
	p, err := planner.Solve(c, req)
	if err != nil {
		t.Fatal(err)
	}
	if p.Offload == nil || len(p.Offload.Transfers) == 0 {
		t.Fatalf("the pofo plan at the smallest budget offloads nothing: %+v", p)
	}
	id, err := db.RecordPlan(ctx, 1, p, nil, "test")
	if err != nil {
		t.Fatal(err)
	}
	got, err := db.Plan(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(p)
	have, _ := json.Marshal(got.Plan)
	if string(have) != string(want) || got.Rebuilt {
		t.Fatalf("stored plan differs (rebuilt=%v):\n got %s\nwant %s", got.Rebuilt, have, want)
	}
}

// A run the release stored reads back into the profile model: its provenance columns fill
// the embedded profile.Metadata, whose Map gives back the metadata_json the release wrote,
// and its measurements carry their stage's name and kind.
func TestReleaseRunReadsIntoProfileModel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chainplan.db")
	copyFile(t, "../testdata/store/release-0.1.db", path)
	ctx := context.Background()
	db := mustOpen(t, path)
	r, err := db.Run(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if r.Format != profile.Format || r.ModelName != "resnet-mini" || r.BatchSize != 8 || r.Extra != nil ||
		!r.CreatedAt.Equal(time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)) {
		t.Fatalf("run 1 provenance %+v", r.Metadata)
	}
	rows, err := db.Query(ctx, "SELECT metadata_json FROM runs WHERE run_id = 1")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	if !rows.Next() {
		t.Fatalf("no run 1: %v", rows.Err())
	}
	var stored map[string]string
	if err := json.Unmarshal([]byte(rows.Values()[0].(string)), &stored); err != nil {
		t.Fatal(err)
	}
	if got := r.Map(); !reflect.DeepEqual(got, stored) {
		t.Fatalf("Map() of the stored run = %v\nmetadata_json = %v", got, stored)
	}
	stages, err := db.Stages(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := db.Measurements(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != len(stages)*int(r.Reps) {
		t.Fatalf("%d measurements of %d stages × %d reps", len(ms), len(stages), r.Reps)
	}
	for _, m := range ms {
		if s := stages[m.StageIndex-1]; m.StageName != s.Name || m.StageKind != s.Kind {
			t.Fatalf("measurement %+v, want the name and kind of stage %+v", m, s)
		}
	}
}
