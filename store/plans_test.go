package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/store"
)

// samplePlan is a plan for a chain of 2 stages (the loss is stage 3).
func samplePlan(budget int64) *chainplan.Plan {
	return &chainplan.Plan{Algo: "rotor", Feasible: true, Makespan: 0.0123, PeakBytes: budget - 10, BudgetBytes: budget,
		Slots: 500, SolveMS: 1.25, Sequence: []chainplan.Op{{Kind: chainplan.FCk, Stage: 1}, {Kind: chainplan.FAll, Stage: 2},
			{Kind: chainplan.FAll, Stage: 3}, {Kind: chainplan.B, Stage: 3}, {Kind: chainplan.B, Stage: 2},
			{Kind: chainplan.FAll, Stage: 1}, {Kind: chainplan.B, Stage: 1}}}
}

func TestRecordPlan(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		ctx := context.Background()
		db := b.open(t)
		res := mustIngest(t, db, sampleProfile(1, 2, 1))
		want := samplePlan(1000)
		id, err := db.RecordPlan(ctx, res.RunID, want, map[string]any{"slots": 500, "mode": "persistent"}, "v1.2.3")
		if err != nil {
			t.Fatalf("RecordPlan: %v", err)
		}
		got, err := db.Plan(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if got.RunID != res.RunID || got.Version != "v1.2.3" || !reflect.DeepEqual(got.Plan, *want) {
			t.Fatalf("Plan()=%+v, want run %d, %+v", got, res.RunID, *want)
		}
		var params map[string]any
		if err := json.Unmarshal(got.Params, &params); err != nil || params["mode"] != "persistent" {
			t.Fatalf("Params=%s (%v)", got.Params, err)
		}
		if _, err := db.RecordPlan(ctx, res.RunID, samplePlan(2000), nil, "v1.2.3"); err != nil {
			t.Fatal(err)
		}
		plans, err := db.Plans(ctx, res.RunID)
		if err != nil || len(plans) != 2 || plans[1].Plan.BudgetBytes != 2000 || string(plans[1].Params) != "{}" {
			t.Fatalf("Plans()=%v, %v", plans, err)
		}
		if n := count(t, db, "SELECT num_ops FROM plans WHERE plan_id = $1", id); n != 7 {
			t.Fatalf("num_ops=%d, want 7", n)
		}
		if n := count(t, db, "SELECT plans FROM run_summary WHERE run_id = $1", res.RunID); n != 2 {
			t.Fatalf("run_summary.plans=%d, want 2", n)
		}
		if _, err := db.RecordPlan(ctx, 99, want, nil, "v"); !errors.Is(err, chainplan.ErrNotFound) {
			t.Fatalf("RecordPlan for run 99: error %v, want ErrNotFound", err)
		}
		if _, err := db.Plan(ctx, 99); !errors.Is(err, chainplan.ErrNotFound) {
			t.Fatalf("Plan(99) error %v, want ErrNotFound", err)
		}
	})
}

func TestRecordExecutionAndOutcomes(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		ctx := context.Background()
		db := b.open(t)
		res := mustIngest(t, db, sampleProfile(1, 2, 1))
		fits, _ := db.RecordPlan(ctx, res.RunID, samplePlan(1000), nil, "v")
		over, _ := db.RecordPlan(ctx, res.RunID, samplePlan(1000), nil, "v")
		never, _ := db.RecordPlan(ctx, res.RunID, samplePlan(1000), nil, "v")
		for _, e := range []store.Execution{
			{PlanID: fits, Steps: 10, StepTimeS: 0.0130, PeakBytes: 990, Device: "cuda:0"},
			{PlanID: fits, Steps: 10, StepTimeS: 0.0128, PeakBytes: 995, Device: "cuda:0"},
			{PlanID: over, Steps: 5, StepTimeS: 0.0140, PeakBytes: 1200, Metadata: map[string]string{"note": "fragmentation"}},
		} {
			if _, err := db.RecordExecution(ctx, &e); err != nil {
				t.Fatalf("RecordExecution: %v", err)
			}
		}
		tests := []struct {
			plan       int64
			executions int64
			fits       any
			peak       any
		}{
			{fits, 2, int64(1), int64(995)},
			{over, 1, int64(0), int64(1200)},
			{never, 0, nil, nil},
		}
		for _, tt := range tests {
			_, rows, err := queryAll(ctx, db, "SELECT executions, fits, measured_peak_bytes, time_error FROM plan_outcomes WHERE plan_id = $1", tt.plan)
			if err != nil || len(rows) != 1 {
				t.Fatalf("plan_outcomes for plan %d: %v, %v", tt.plan, rows, err)
			}
			r := rows[0]
			if r[0] != tt.executions || r[1] != tt.fits || r[2] != tt.peak {
				t.Errorf("plan %d: executions, fits, peak = %v, %v, %v; want %v, %v, %v", tt.plan, r[0], r[1], r[2], tt.executions, tt.fits, tt.peak)
			}
		}
		for _, bad := range []store.Execution{
			{PlanID: 99, Steps: 1, StepTimeS: 1},
			{PlanID: fits, Steps: 0, StepTimeS: 1},
			{PlanID: fits, Steps: 1, StepTimeS: -1},
			{PlanID: fits, Steps: 1, StepTimeS: 1, PeakBytes: -5},
		} {
			if _, err := db.RecordExecution(ctx, &bad); err == nil {
				t.Errorf("RecordExecution(%+v) succeeded, want an error", bad)
			}
		}
	})
}
