package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
)

// PipelinePlan is what the plans table keeps of a pipeline plan (chainplan.pipeline/v1,
// DESIGN.md): the columns every plan has, filled from the pipeline's figures, and the whole
// document. The store does not read the document; the planner that wrote it validated it.
type PipelinePlan struct {
	Algo        string  // the algorithm (plans.algo)
	MemoryBytes int64   // memory per device (plans.budget_bytes)
	Period      float64 // the period: time per mini-batch in the steady state (plans.makespan_s)
	PeakBytes   int64   // the largest memory of a device (plans.peak_bytes)
	SolveMS     float64 // solver time (plans.solve_ms)
	NumOps      int     // operations of one period of the pattern (plans.num_ops)
	Document    []byte  // the chainplan.pipeline/v1 document (plans.plan_json)
}

// RecordPipelinePlan stores pipeline plan p, computed from run runID's chain with the
// given parameters (a JSON-marshalable value; nil for none) by chainplan version, and
// returns the new plan id. Its row has slots 0, feasible 1 and an empty sequence; the
// document is in plan_json. A run that does not exist fails with an error wrapping
// chainplan.ErrNotFound; a document that is not a JSON object, or a period that is not a
// finite positive number, is refused.
func (db *DB) RecordPipelinePlan(ctx context.Context, runID int64, p *PipelinePlan, params any, version string) (int64, error) {
	if p == nil {
		return 0, errors.New("record pipeline plan: nil plan")
	}
	if math.IsNaN(p.Period) || math.IsInf(p.Period, 0) || p.Period <= 0 || math.IsNaN(p.SolveMS) {
		return 0, fmt.Errorf("record pipeline plan: period %g or solve time %g is not a number", p.Period, p.SolveMS)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(p.Document, &doc); err != nil {
		return 0, fmt.Errorf("record pipeline plan: the document is not a JSON object: %w", err)
	}
	// A pipeline plan has no sequence or slots; the document holds its pattern.
	return db.insertPlan(ctx, runID, "record pipeline plan", planRow{
		algo: p.Algo, params: params, budgetBytes: p.MemoryBytes, feasible: true, makespanS: p.Period,
		peakBytes: p.PeakBytes, solveMS: p.SolveMS, numOps: p.NumOps, sequenceJSON: "[]", version: version,
		planJSON: string(p.Document),
	})
}

// PlanDocument returns the whole document of plan id as stored (plans.plan_json), whatever
// its family, or an error wrapping chainplan.ErrNotFound.
func (db *DB) PlanDocument(ctx context.Context, id int64) (json.RawMessage, error) {
	var doc sql.NullString
	err := db.queryRow(ctx, "SELECT plan_json FROM plans WHERE plan_id = ?", id).Scan(&doc)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("no plan %d in %s", id, db.where)
	}
	if err != nil {
		return nil, fmt.Errorf("read plan %d: %w", id, err)
	}
	return json.RawMessage(doc.String), nil
}
