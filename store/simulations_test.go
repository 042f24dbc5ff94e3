package store_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/store"
)

func sampleSimulation(runID int64, schedule string, period float64) *store.Simulation {
	return &store.Simulation{RunID: runID, Schedule: schedule, Microbatches: 4, Minibatches: 16,
		Params: map[string]any{"bandwidth": 12e9}, MakespanS: 16 * period, PeriodS: period, MicrobatchPeriodS: period / 4,
		SteadyBubble: 0.25, PeakBytes: 1 << 30, VersionDifference: 1, Result: []byte(`{"format": "chainplan.pipesim/v1"}`),
		Version: "v1", Stages: []store.SimulationStage{
			{Index: 0, First: 1, Last: 3, Device: 0, BusyS: 1, Bubble: 0.3, SteadyBubble: 0.2, PeakInflight: 2, PeakActivationBytes: 100, WeightVersions: 1, DevicePeakBytes: 1 << 30},
			{Index: 1, First: 4, Last: 6, Device: 1, Checkpointed: true, BusyS: 1, Bubble: 0.3, SteadyBubble: 0.3, PeakInflight: 1, PeakActivationBytes: 50, WeightVersions: 1, DevicePeakBytes: 1 << 29},
		}}
}

// TestRecordSimulation stores simulations of two schedules and compares them in SQL, as
// docs/sql.md's example does; bad rows and missing runs or plans are refused.
func TestRecordSimulation(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		ctx := context.Background()
		db := b.open(t)
		res, err := db.Ingest(ctx, sampleProfile(1, 6, 1))
		if err != nil {
			t.Fatal(err)
		}
		a, err := db.RecordSimulation(ctx, sampleSimulation(res.RunID, "gpipe", 0.5))
		if err != nil {
			t.Fatal(err)
		}
		second, err := db.RecordSimulation(ctx, sampleSimulation(res.RunID, "1f1b-flush", 0.4))
		if err != nil || second != a+1 {
			t.Fatalf("RecordSimulation = %d, %v", second, err)
		}
		if doc, err := db.SimulationResult(ctx, a); err != nil || string(doc) != `{"format": "chainplan.pipesim/v1"}` {
			t.Fatalf("SimulationResult = %s, %v", doc, err)
		}
		// The comparison docs/sql.md shows, on the read-only connection.
		run, err := db.Run(ctx, res.RunID)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := db.Query(ctx, `SELECT schedule, period_s, max(ss.device_peak_bytes) AS peak
			FROM simulation_summary s JOIN simulation_stages ss USING (simulation_id)
			WHERE s.model_name = $1 GROUP BY s.simulation_id, s.schedule, s.period_s ORDER BY period_s`, run.ModelName)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for rows.Next() {
			got = append(got, rows.Values()[0].(string))
		}
		if err := rows.Close(); err != nil || len(got) != 2 || got[0] != "1f1b-flush" {
			t.Fatalf("schedules by period: %v, %v", got, err)
		}
		if n := count(t, db, "SELECT count(*) FROM simulation_stages WHERE checkpointed = 1"); n != 2 {
			t.Errorf("%d checkpointed stage rows, want 2", n)
		}
		for name, s := range map[string]*store.Simulation{
			"no run":     sampleSimulation(99, "gpipe", 1),
			"no plan":    func() *store.Simulation { s := sampleSimulation(res.RunID, "gpipe", 1); s.PlanID = 7; return s }(),
			"NaN period": sampleSimulation(res.RunID, "gpipe", math.NaN()),
			"no stages":  func() *store.Simulation { s := sampleSimulation(res.RunID, "gpipe", 1); s.Stages = nil; return s }(),
			"bad result": func() *store.Simulation {
				s := sampleSimulation(res.RunID, "gpipe", 1)
				s.Result = []byte("[]")
				return s
			}(),
		} {
			_, err := db.RecordSimulation(ctx, s)
			if err == nil || (name == "no run" || name == "no plan") != errors.Is(err, chainplan.ErrNotFound) {
				t.Errorf("%s: %v", name, err)
			}
		}
		if n := count(t, db, "SELECT count(*) FROM simulations"); n != 2 {
			t.Errorf("%d simulations stored, want 2 (nothing from the refused ones)", n)
		}
		if _, err := db.SimulationResult(ctx, 99); !errors.Is(err, chainplan.ErrNotFound) {
			t.Errorf("simulation 99: %v", err)
		}
	})
}

// TestExecutions reads back what RecordExecution stored, metadata included.
func TestExecutions(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		ctx := context.Background()
		db := b.open(t)
		res, err := db.Ingest(ctx, sampleProfile(1, 2, 1))
		if err != nil {
			t.Fatal(err)
		}
		p := &store.PipelinePlan{Algo: "contiguous", MemoryBytes: 8e9, Period: 0.5, PeakBytes: 7e9, NumOps: 4, Document: []byte(`{}`)}
		id, err := db.RecordPipelinePlan(ctx, res.RunID, p, nil, "v1")
		if err != nil {
			t.Fatal(err)
		}
		for rank := range 2 {
			if _, err := db.RecordExecution(ctx, &store.Execution{PlanID: id, Steps: 3, StepTimeS: 0.25, PeakBytes: int64(rank + 1),
				Device: "cpu", Metadata: map[string]string{"rank": string(rune('0' + rank))}}); err != nil {
				t.Fatal(err)
			}
		}
		got, err := db.Executions(ctx, id)
		if err != nil || len(got) != 2 || got[1].Metadata["rank"] != "1" || got[1].PeakBytes != 2 || got[0].Steps != 3 {
			t.Fatalf("Executions = %+v, %v", got, err)
		}
		if none, err := db.Executions(ctx, 99); err != nil || len(none) != 0 {
			t.Fatalf("Executions(99) = %v, %v", none, err)
		}
	})
}
