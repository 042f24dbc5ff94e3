package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/simulate"
	"github.com/chainplan/chainplan/store"
)

// TestCopy copies a SQLite history into each backend twice: the first copy brings every
// run with its stages, measurements, plans, executions and bandwidths, unchanged but for
// their ids; the second adds nothing; a plan and an execution added locally since, and a
// run another node stored meanwhile, are handled as a team's sync needs.
func TestCopy(t *testing.T) {
	ctx := context.Background()
	eachBackend(t, func(t *testing.T, b testBackend) {
		src := allBackends[0].open(t)
		buildHistory(t, src, 12, 2)
		if err := src.RecordBandwidth(ctx, &store.Bandwidth{RunID: 2, BytesPerS: 12e9, Device: "cuda:0", Method: "pinned"}); err != nil {
			t.Fatal(err)
		}
		// Two pipeline simulations, one of them of a stored plan.
		plans, err := src.Plans(ctx, 3)
		if err != nil || len(plans) == 0 {
			t.Fatalf("plans of run 3: %v, %v", plans, err)
		}
		ofPlan := sampleSimulation(3, "gpipe", 0.5)
		ofPlan.PlanID = plans[0].ID
		for _, s := range []*store.Simulation{ofPlan, sampleSimulation(2, "1f1b-flush", 0.4)} {
			if _, err := src.RecordSimulation(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
		dst := b.open(t)
		// Another node stored run 5's profile already.
		if _, err := dst.Ingest(ctx, sampleProfile(4, 0, 2)); err != nil {
			t.Fatal(err)
		}
		stats, err := store.Copy(ctx, dst, src)
		if err != nil {
			t.Fatal(err)
		}
		want := store.CopyStats{Runs: 11, RunsSkipped: 1, Plans: 24, Executions: 18, Bandwidths: 1, Simulations: 2}
		want.Stages, want.Measurements = int(count(t, src, "SELECT count(*) FROM stages WHERE run_id <> 5")),
			int(count(t, src, "SELECT count(*) FROM measurements WHERE run_id <> 5"))
		if stats != want {
			t.Fatalf("first copy: %+v, want %+v", stats, want)
		}
		sameHistory(t, src, dst)
		if n := count(t, dst, "SELECT count(*) FROM simulation_stages"); n != 4 {
			t.Errorf("%d simulation stages copied, want 4", n)
		}
		// The simulated plan is the copy's plan of the same run, created at the same time.
		if n := count(t, dst, `SELECT count(*) FROM simulations s JOIN plans p ON p.plan_id = s.plan_id
			WHERE p.run_id = s.run_id AND p.created_at = $1`, plans[0].CreatedAt.UTC().Format("2006-01-02T15:04:05.000Z")); n != 1 {
			t.Errorf("%d copied simulations refer to the copy of their plan, want 1", n)
		}
		again, err := store.Copy(ctx, dst, src)
		if err != nil {
			t.Fatal(err)
		}
		if want := (store.CopyStats{RunsSkipped: 12, PlansSkipped: 24}); again != want {
			t.Fatalf("second copy: %+v, want %+v", again, want)
		}
		// A plan and an execution recorded locally since go over on the next copy.
		id, err := src.RecordPlan(ctx, 3, samplePlan(1000), nil, "v2")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := src.RecordExecution(ctx, &store.Execution{PlanID: id, Steps: 3, StepTimeS: 0.5, PeakBytes: 900}); err != nil {
			t.Fatal(err)
		}
		third, err := store.Copy(ctx, dst, src)
		if err != nil {
			t.Fatal(err)
		}
		if want := (store.CopyStats{RunsSkipped: 12, Plans: 1, PlansSkipped: 24, Executions: 1}); third != want {
			t.Fatalf("third copy: %+v, want %+v", third, want)
		}
		sameHistory(t, src, dst)
	})
}

// sameHistory checks that dst holds src's runs (by content hash) with the same
// provenance, stages, measurements, plans and executions.
func sameHistory(t *testing.T, src, dst *store.DB) {
	t.Helper()
	ctx := context.Background()
	runs, err := src.Runs(ctx, store.RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		var got *store.Run
		all, err := dst.Runs(ctx, store.RunFilter{ModelName: r.ModelName})
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range all {
			if d.SHA256 == r.SHA256 {
				got = d
			}
		}
		if got == nil {
			t.Fatalf("run %d (%s) not in the copy", r.ID, r.SHA256)
		}
		if r.ID == 5 { // stored by another node: its own ingest time
			continue
		}
		want := *r
		want.ID = got.ID
		if !reflect.DeepEqual(*got, want) {
			t.Fatalf("run %d: copy %+v\nwant %+v", r.ID, *got, want)
		}
		for _, read := range []func(*store.DB, int64) (any, error){
			func(db *store.DB, id int64) (any, error) { return db.Stages(ctx, id) },
			func(db *store.DB, id int64) (any, error) { return db.Measurements(ctx, id) },
			func(db *store.DB, id int64) (any, error) { return plansOf(ctx, db, id) },
		} {
			a, errA := read(src, r.ID)
			b, errB := read(dst, got.ID)
			if errA != nil || errB != nil || !reflect.DeepEqual(a, b) {
				t.Fatalf("run %d: copy differs (%v, %v):\n%v\n%v", r.ID, errA, errB, b, a)
			}
		}
	}
}

// plansOf returns the plans of a run with their executions, ids left out.
func plansOf(ctx context.Context, db *store.DB, runID int64) ([]any, error) {
	plans, err := db.Plans(ctx, runID)
	if err != nil {
		return nil, err
	}
	var out []any
	for _, p := range plans {
		_, execs, err := queryAll(ctx, db, `SELECT created_at, steps, step_time_s, peak_bytes, torch_version, device, host,
			metadata_json FROM executions WHERE plan_id = $1 ORDER BY created_at, step_time_s`, p.ID)
		if err != nil {
			return nil, err
		}
		out = append(out, []any{p.CreatedAt, p.Plan, string(p.Params), p.Version, p.Rebuilt, execs})
	}
	return out, nil
}

// The release database copies into each backend, and its plans replay from the copy.
func TestCopyReleaseDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chainplan.db")
	copyFile(t, "../testdata/store/release-0.1.db", path)
	ctx := context.Background()
	src := mustOpen(t, path)
	eachBackend(t, func(t *testing.T, b testBackend) {
		dst := b.open(t)
		stats, err := store.Copy(ctx, dst, src)
		if err != nil || stats.Runs != 1 || stats.Plans != 3 {
			t.Fatalf("Copy = %+v, %v; want 1 run and 3 plans", stats, err)
		}
		c, err := runChain(ctx, dst, 1)
		if err != nil {
			t.Fatal(err)
		}
		plans, err := dst.Plans(ctx, 1)
		if err != nil || len(plans) != 3 {
			t.Fatalf("%d plans, %v", len(plans), err)
		}
		for _, p := range plans {
			if !p.Rebuilt || p.Plan.Algo == "pofo" {
				continue
			}
			rep := simulate.Replay(c, p.Plan.Sequence, p.Plan.BudgetBytes)
			if !rep.Valid || rep.Peak != p.Plan.PeakBytes || rep.Makespan != p.Plan.Makespan {
				t.Errorf("plan %d (%s) of the copy: replay valid=%v peak %d makespan %g", p.ID, p.Plan.Algo, rep.Valid, rep.Peak, rep.Makespan)
			}
		}
		var _ chainplan.Plan = plans[0].Plan
	})
}

// Copy brings the advise and search3d results with their candidates, clusters and measured
// runs, a result's run found again by its profile; copying again adds nothing, and a run
// measured since goes over alone.
func TestCopyAdvice(t *testing.T) {
	ctx := context.Background()
	eachBackend(t, func(t *testing.T, b testBackend) {
		src := allBackends[0].open(t)
		buildHistory(t, src, 3, 1)
		cand := store.AdviceCandidate{Candidate: 0, Rank: 1, Strategy: "data", Devices: 4, Feasible: true,
			IterationTimeS: 0.25, MemoryBytes: 1 << 30, CapacityBytes: 16 << 30, DetailJSON: []byte(`{}`),
			DataDegree: sql.NullInt64{Int64: 4, Valid: true}}
		advice := func(run int64, cluster string) int64 {
			id, err := src.RecordAdvice(ctx, &store.Advice{Kind: "advise", RunID: sql.NullInt64{Int64: run, Valid: run > 0},
				ModelName: "resnet50", ClusterName: cluster, ClusterJSON: []byte(`{"name":"` + cluster + `"}`),
				NumNodes: 1, NumDevices: 4, Source: "cli", RequestJSON: []byte(`{}`),
				ResultJSON: []byte(fmt.Sprintf(`{"run":%d}`, run)), Version: "v", Candidates: []store.AdviceCandidate{cand}})
			if err != nil {
				t.Fatal(err)
			}
			return id
		}
		a2, a0 := advice(2, "c1"), advice(0, "c1") // on run 2, and on a chain file
		advice(3, "c2")
		measure := func(id int64, s float64) {
			if _, err := src.RecordAdviceMeasurement(ctx, &store.AdviceMeasurement{AdviceID: id, Candidate: 0,
				Iterations: 10, IterationTimeS: s, Host: "h", OutOfMemory: s > 1}); err != nil {
				t.Fatal(err)
			}
		}
		measure(a2, 0.3)
		measure(a0, 2)
		dst := b.open(t)
		if _, err := dst.Ingest(ctx, sampleProfile(1, 0, 1)); err != nil { // dst's run 1 is src's run 2
			t.Fatal(err)
		}
		stats, err := store.Copy(ctx, dst, src)
		if err != nil {
			t.Fatal(err)
		}
		if stats.Advice != 3 || stats.AdviceSkipped != 0 || stats.AdviceMeasurements != 2 {
			t.Fatalf("first copy: %+v", stats)
		}
		_, sha, err := queryAll(ctx, src, "SELECT content_sha256 FROM runs WHERE run_id = 2")
		if err != nil {
			t.Fatal(err)
		}
		q := `SELECT count(*) FROM advice a JOIN runs r USING (run_id) JOIN clusters c USING (cluster_id)
			WHERE a.result_json = '{"run":2}' AND r.content_sha256 = $1 AND c.name = 'c1'`
		if got := count(t, dst, q, sha[0][0]); got != 1 {
			t.Fatalf("the advice of run 2 in dst: %d rows, want its run and cluster found again", got)
		}
		for _, q := range []string{"SELECT count(*) FROM clusters", "SELECT count(*) FROM advice WHERE run_id IS NULL",
			"SELECT count(*) FROM advice_accuracy WHERE accuracy IS NULL", "SELECT count(*) FROM advice_candidates",
			"SELECT count(*) FROM stage_parallel"} {
			if got, want := count(t, dst, q), count(t, src, q); got != want {
				t.Fatalf("%s: %d in dst, %d in src", q, got, want)
			}
		}
		measure(a2, 0.35)
		again, err := store.Copy(ctx, dst, src)
		if err != nil {
			t.Fatal(err)
		}
		if again.Advice != 0 || again.AdviceSkipped != 3 || again.AdviceMeasurements != 1 {
			t.Fatalf("second copy: %+v, want the new measurement alone", again)
		}
	})
}
