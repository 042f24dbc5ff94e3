package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/chainplan/chainplan"
)

// StoredPlan is a plan as the plans table keeps it.
type StoredPlan struct {
	ID        int64
	RunID     int64
	CreatedAt time.Time
	// Plan holds algo, feasibility, predicted makespan (seconds) and peak, budget, slots,
	// solver time and the sequence.
	Plan chainplan.Plan
	// Params holds the solver's parameters as a JSON object ("{}" when none).
	Params json.RawMessage
	// Version is the chainplan version that computed the plan.
	Version string
	// Rebuilt marks a plan stored before the plans table kept whole documents (migration
	// 0003): Plan was rebuilt from its columns and lacks what only the document held, the
	// transfers of an offloading plan.
	Rebuilt bool
}

// RecordPlan stores plan, computed from run runID's chain with the given parameters (a
// JSON-marshalable value, usually a map; nil for none) by chainplan version, and returns
// the new plan id. A run that does not exist fails with an error wrapping
// chainplan.ErrNotFound.
func (db *DB) RecordPlan(ctx context.Context, runID int64, plan *chainplan.Plan, params any, version string) (int64, error) {
	if plan == nil {
		return 0, errors.New("record plan: nil plan")
	}
	if math.IsNaN(plan.Makespan) || math.IsInf(plan.Makespan, 0) || math.IsNaN(plan.SolveMS) {
		return 0, fmt.Errorf("record plan: makespan %g or solve time %g is not a number", plan.Makespan, plan.SolveMS)
	}
	seq := plan.Sequence
	if seq == nil {
		seq = []chainplan.Op{}
	}
	seqJSON, err := json.Marshal(seq)
	if err != nil {
		return 0, fmt.Errorf("record plan: %w", err)
	}
	planJSON, err := json.Marshal(plan)
	if err != nil {
		return 0, fmt.Errorf("record plan: %w", err)
	}
	return db.insertPlan(ctx, runID, "record plan", planRow{
		algo: plan.Algo, params: params, budgetBytes: plan.BudgetBytes, slots: plan.Slots, feasible: plan.Feasible,
		makespanS: plan.Makespan, peakBytes: plan.PeakBytes, solveMS: plan.SolveMS, numOps: len(seq),
		sequenceJSON: string(seqJSON), version: version, planJSON: string(planJSON),
	})
}

// planRow is one row of the plans table, as RecordPlan and RecordPipelinePlan write it.
type planRow struct {
	algo         string
	params       any // marshalled into params_json; nil for "{}"
	budgetBytes  int64
	slots        int64
	feasible     bool
	makespanS    float64
	peakBytes    int64
	solveMS      float64
	numOps       int
	sequenceJSON string
	version      string
	planJSON     string
}

// insertPlan stores row as a plan of run runID and returns its id; a run that does not
// exist fails with an error wrapping chainplan.ErrNotFound. what names the caller in
// errors ("record plan").
func (db *DB) insertPlan(ctx context.Context, runID int64, what string, row planRow) (int64, error) {
	paramsJSON := []byte("{}")
	if row.params != nil {
		var err error
		if paramsJSON, err = json.Marshal(row.params); err != nil {
			return 0, fmt.Errorf("%s: parameters: %w", what, err)
		}
	}
	var id int64
	err := db.write(ctx, func(tx txn) error {
		var exists bool
		if err := tx.queryRow(ctx, "SELECT EXISTS (SELECT 1 FROM runs WHERE run_id = ?)", runID).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			return notFound("no run %d in %s", runID, db.where)
		}
		return tx.queryRow(ctx, `INSERT INTO plans (run_id, created_at, algo, params_json, budget_bytes, slots,
			feasible, makespan_s, peak_bytes, solve_ms, num_ops, sequence_json, chainplan_version, plan_json)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING plan_id`,
			runID, formatTime(time.Now()), row.algo, string(paramsJSON), row.budgetBytes, row.slots, flag(row.feasible),
			row.makespanS, row.peakBytes, row.solveMS, row.numOps, row.sequenceJSON, row.version, row.planJSON).Scan(&id)
	})
	if err != nil {
		return 0, fmt.Errorf("%s for run %d: %w", what, runID, err)
	}
	return id, nil
}

const planColumns = `plan_id, run_id, created_at, params_json, chainplan_version, plan_json, plan_json_rebuilt`

func scanPlan(s interface{ Scan(...any) error }) (*StoredPlan, error) {
	var p StoredPlan
	var created, params, doc string
	err := s.Scan(&p.ID, &p.RunID, &created, &params, &p.Version, &doc, &p.Rebuilt)
	if err != nil {
		return nil, err
	}
	if p.CreatedAt, err = parseTime(created); err != nil {
		return nil, err
	}
	p.Params = json.RawMessage(params)
	if err := json.Unmarshal([]byte(doc), &p.Plan); err != nil {
		return nil, fmt.Errorf("plan %d: bad plan_json: %w", p.ID, err)
	}
	return &p, nil
}

// Plan returns plan id, or an error wrapping chainplan.ErrNotFound.
func (db *DB) Plan(ctx context.Context, id int64) (*StoredPlan, error) {
	p, err := scanPlan(db.queryRow(ctx, "SELECT "+planColumns+" FROM plans WHERE plan_id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("no plan %d in %s", id, db.where)
	}
	if err != nil {
		return nil, fmt.Errorf("read plan %d: %w", id, err)
	}
	return p, nil
}

// Plans returns the plans of run runID, oldest first.
func (db *DB) Plans(ctx context.Context, runID int64) ([]*StoredPlan, error) {
	rows, err := db.query(ctx, "SELECT "+planColumns+" FROM plans WHERE run_id = ? ORDER BY plan_id", runID)
	if err != nil {
		return nil, fmt.Errorf("read plans of run %d: %w", runID, err)
	}
	defer rows.Close()
	var out []*StoredPlan
	for rows.Next() {
		p, err := scanPlan(rows)
		if err != nil {
			return nil, fmt.Errorf("read plans of run %d: %w", runID, err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read plans of run %d: %w", runID, err)
	}
	return out, nil
}

// Execution is one measured execution of a plan: a row of the executions table.
type Execution struct {
	ID           int64     // set by RecordExecution
	PlanID       int64     // the plan executed
	CreatedAt    time.Time // when it was measured; RecordExecution uses the current time when zero
	Steps        int64     // training steps measured, ≥ 1
	StepTimeS    float64   // median step time, seconds
	PeakBytes    int64     // measured activation peak, comparable with the plan's peak_bytes
	TorchVersion string
	Device       string
	Host         string
	Metadata     map[string]string // anything else the recorder knows
}

// RecordExecution stores a measured execution of a plan and returns its id. A plan that
// does not exist fails with an error wrapping chainplan.ErrNotFound.
func (db *DB) RecordExecution(ctx context.Context, e *Execution) (int64, error) {
	if e.Steps < 1 || e.StepTimeS < 0 || math.IsNaN(e.StepTimeS) || math.IsInf(e.StepTimeS, 0) || e.PeakBytes < 0 {
		return 0, fmt.Errorf("record execution: bad measurement (steps %d, step time %g s, peak %d bytes)",
			e.Steps, e.StepTimeS, e.PeakBytes)
	}
	meta := e.Metadata
	if meta == nil {
		meta = map[string]string{}
	}
	metaJSON, err := json.Marshal(meta)
	if err != nil {
		return 0, fmt.Errorf("record execution: %w", err)
	}
	created := e.CreatedAt
	if created.IsZero() {
		created = time.Now()
	}
	var id int64
	err = db.write(ctx, func(tx txn) error {
		var exists bool
		if err := tx.queryRow(ctx, "SELECT EXISTS (SELECT 1 FROM plans WHERE plan_id = ?)", e.PlanID).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			return notFound("no plan %d in %s", e.PlanID, db.where)
		}
		return tx.queryRow(ctx, `INSERT INTO executions (plan_id, created_at, steps, step_time_s, peak_bytes,
			torch_version, device, host, metadata_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING execution_id`,
			e.PlanID, formatTime(created), e.Steps, e.StepTimeS, e.PeakBytes, e.TorchVersion, e.Device, e.Host,
			string(metaJSON)).Scan(&id)
	})
	if err != nil {
		return 0, fmt.Errorf("record execution of plan %d: %w", e.PlanID, err)
	}
	return id, nil
}
