package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/store"
)

func TestRecordPipelinePlan(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		ctx := context.Background()
		db := b.open(t)
		res := mustIngest(t, db, sampleProfile(1, 2, 1))
		doc := []byte(`{"format": "chainplan.pipeline/v1", "algo": "contiguous", "period": 0.5}`)
		p := &store.PipelinePlan{Algo: "contiguous", MemoryBytes: 8e9, Period: 0.5, PeakBytes: 7e9, SolveMS: 1.5, NumOps: 6, Document: doc}
		id, err := db.RecordPipelinePlan(ctx, res.RunID, p, map[string]any{"gpus": 2}, "v1")
		if err != nil {
			t.Fatal(err)
		}
		got, err := db.PlanDocument(ctx, id)
		if err != nil || string(got) != string(doc) {
			t.Fatalf("PlanDocument=%s, %v; want %s", got, err, doc)
		}
		// The columns every plan has carry the pipeline's figures.
		for q, want := range map[string]int64{
			"SELECT budget_bytes FROM plans WHERE plan_id = $1":                                         8e9,
			"SELECT peak_bytes FROM plans WHERE plan_id = $1":                                           7e9,
			"SELECT num_ops FROM plans WHERE plan_id = $1":                                              6,
			"SELECT slots FROM plans WHERE plan_id = $1":                                                0,
			"SELECT feasible FROM plans WHERE plan_id = $1":                                             1,
			"SELECT CAST(json_extract(params_json, '$.gpus') AS INTEGER) FROM plans WHERE plan_id = $1": 2,
			"SELECT CAST(makespan_s * 10 AS INTEGER) FROM plans WHERE plan_id = $1":                     5,
		} {
			if n := count(t, db, q, id); n != want {
				t.Errorf("%s: %d, want %d", q, n, want)
			}
		}
		if _, err := db.RecordPipelinePlan(ctx, 99, p, nil, "v1"); !errors.Is(err, chainplan.ErrNotFound) {
			t.Errorf("run 99: %v, want ErrNotFound", err)
		}
		bad := *p
		bad.Document = []byte("[1]")
		if _, err := db.RecordPipelinePlan(ctx, res.RunID, &bad, nil, "v1"); err == nil {
			t.Error("a document that is no JSON object was stored")
		}
		bad = *p
		bad.Period = 0
		if _, err := db.RecordPipelinePlan(ctx, res.RunID, &bad, nil, "v1"); err == nil {
			t.Error("a zero period was stored")
		}
		if _, err := db.PlanDocument(ctx, 999); !errors.Is(err, chainplan.ErrNotFound) {
			t.Errorf("plan 999: %v, want ErrNotFound", err)
		}
		var m map[string]any
		if err := json.Unmarshal(got, &m); err != nil || m["algo"] != "contiguous" {
			t.Errorf("document %s", got)
		}
	})
}
