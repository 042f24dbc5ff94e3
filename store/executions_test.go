package store_test

import (
	"context"
	"testing"

	"github.com/chainplan/chainplan/store"
)

func TestExecutions(t *testing.T) {
	eachBackend(t, testExecutions)
}

func testExecutions(t *testing.T, b testBackend) {
	ctx := context.Background()
	db := b.open(t)
	res, err := db.Ingest(ctx, sampleProfile(1, 2, 1))
	if err != nil {
		t.Fatal(err)
	}
	ran, _ := db.RecordPlan(ctx, res.RunID, samplePlan(1000), nil, "v")
	never, _ := db.RecordPlan(ctx, res.RunID, samplePlan(1000), nil, "v")
	for rank, peak := range []int64{900, 950} {
		ex := sampleExecution(ran, peak, map[string]string{"rank": string(rune('0' + rank))})
		if _, err := db.RecordExecution(ctx, ex); err != nil {
			t.Fatal(err)
		}
	}
	got, err := db.Executions(ctx, ran)
	if err != nil || len(got) != 2 {
		t.Fatalf("Executions: %d rows, %v", len(got), err)
	}
	if got[0].PeakBytes != 900 || got[1].Metadata["rank"] != "1" || got[1].PlanID != ran || got[0].CreatedAt.IsZero() {
		t.Errorf("rows %+v %+v", got[0], got[1])
	}
	if none, err := db.Executions(ctx, never); err != nil || len(none) != 0 {
		t.Errorf("a plan that never ran: %v, %v", none, err)
	}
}

func sampleExecution(planID, peak int64, meta map[string]string) *store.Execution {
	return &store.Execution{PlanID: planID, Steps: 3, StepTimeS: 0.01, PeakBytes: peak, Device: "cpu", Metadata: meta}
}
