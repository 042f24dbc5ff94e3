package store_test

import (
	"context"
	"testing"

	"github.com/chainplan/chainplan/store"
)

// TestOutcomes checks Outcomes against the history buildHistory writes: two plans a run,
// executions for three runs in four, filters by run and by model.
func TestOutcomes(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		db := b.open(t)
		buildHistory(t, db, 8, 2)
		ctx := context.Background()
		all, err := db.Outcomes(ctx, store.OutcomeFilter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != 16 {
			t.Fatalf("%d outcomes, want 16", len(all))
		}
		for _, o := range all {
			ran := o.RunID%4 != 0 // run i+1 has executions unless i%4 == 3
			if ran != (o.Executions > 0) || ran != (o.MeasuredPeakBytes > 0) || ran != (o.MeasuredTimeS > 0) {
				t.Errorf("plan %d of run %d: %d executions, measured %d bytes and %g s", o.PlanID, o.RunID,
					o.Executions, o.MeasuredPeakBytes, o.MeasuredTimeS)
			}
		}
		run2, err := db.Outcomes(ctx, store.OutcomeFilter{RunID: 2})
		if err != nil || len(run2) != 2 || run2[0].RunID != 2 {
			t.Fatalf("run 2: %+v, %v", run2, err)
		}
		model, err := db.Outcomes(ctx, store.OutcomeFilter{ModelName: all[0].ModelName})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range model {
			if o.ModelName != all[0].ModelName {
				t.Fatalf("model filter returned %s", o.ModelName)
			}
		}
		if len(model) == 0 || len(model) == len(all) {
			t.Fatalf("model filter kept %d of %d", len(model), len(all))
		}
		none, err := db.Outcomes(ctx, store.OutcomeFilter{RunID: 99})
		if err != nil || len(none) != 0 {
			t.Fatalf("run 99: %v, %v", none, err)
		}
	})
}
