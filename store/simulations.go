package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"
)

// Simulation is a row of the simulations table with its stages: a pipeline simulation
// (planner/pipesim) made from a stored run. The store keeps its document without reading
// it.
type Simulation struct {
	ID                int64     // set by RecordSimulation
	RunID             int64     // the run whose chain was simulated
	PlanID            int64     // the stored plan simulated (0: none)
	CreatedAt         time.Time // RecordSimulation uses the current time when zero
	Schedule          string
	Microbatches      int
	Minibatches       int
	UnitTime          bool
	Params            any // the request, marshalled into params_json (nil: "{}")
	MakespanS         float64
	PeriodS           float64
	MicrobatchPeriodS float64
	SteadyBubble      float64 // mean over stages
	PeakBytes         int64   // the largest device's
	VersionDifference int
	MaxStaleness      int
	Result            []byte // the chainplan.pipesim/v1 document
	Version           string // chainplan's
	Stages            []SimulationStage
}

// SimulationStage is a row of the simulation_stages table.
type SimulationStage struct {
	Index, First, Last, Device  int
	Checkpointed                bool
	BusyS, Bubble, SteadyBubble float64
	PeakInflight                int
	PeakActivationBytes         int64
	WeightVersions              int
	DevicePeakBytes             int64
}

// RecordSimulation stores s and its stages in one transaction and returns the new id. A run
// (or a plan, when PlanID is set) that does not exist fails with an error wrapping
// chainplan.ErrNotFound; figures that are not finite, no stages or a document that is not
// a JSON object are refused.
func (db *DB) RecordSimulation(ctx context.Context, s *Simulation) (int64, error) {
	if s == nil {
		return 0, errors.New("record simulation: nil simulation")
	}
	for _, v := range []float64{s.MakespanS, s.PeriodS, s.MicrobatchPeriodS, s.SteadyBubble} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, fmt.Errorf("record simulation: makespan %g, period %g, micro-batch period %g or bubble %g is not a finite number",
				s.MakespanS, s.PeriodS, s.MicrobatchPeriodS, s.SteadyBubble)
		}
	}
	if len(s.Stages) == 0 || s.Microbatches < 1 || s.Minibatches < 1 {
		return 0, fmt.Errorf("record simulation: %d stages, %d micro-batches, %d mini-batches: want at least one of each",
			len(s.Stages), s.Microbatches, s.Minibatches)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(s.Result, &doc); err != nil {
		return 0, fmt.Errorf("record simulation: the result is not a JSON object: %w", err)
	}
	params := []byte("{}")
	if s.Params != nil {
		var err error
		if params, err = json.Marshal(s.Params); err != nil {
			return 0, fmt.Errorf("record simulation: parameters: %w", err)
		}
	}
	created := s.CreatedAt
	if created.IsZero() {
		created = time.Now()
	}
	var planID any
	if s.PlanID > 0 {
		planID = s.PlanID
	}
	var id int64
	err := db.write(ctx, func(tx txn) error {
		var exists bool
		if err := tx.queryRow(ctx, "SELECT EXISTS (SELECT 1 FROM runs WHERE run_id = ?)", s.RunID).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			return notFound("no run %d in %s", s.RunID, db.where)
		}
		if s.PlanID > 0 {
			if err := tx.queryRow(ctx, "SELECT EXISTS (SELECT 1 FROM plans WHERE plan_id = ?)", s.PlanID).Scan(&exists); err != nil {
				return err
			}
			if !exists {
				return notFound("no plan %d in %s", s.PlanID, db.where)
			}
		}
		err := tx.queryRow(ctx, `INSERT INTO simulations (run_id, plan_id, created_at, schedule, num_stages,
			microbatches, minibatches, unit_time, params_json, makespan_s, period_s, microbatch_period_s, steady_bubble,
			peak_bytes, version_difference, max_staleness, result_json, chainplan_version)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING simulation_id`,
			s.RunID, planID, formatTime(created), s.Schedule, len(s.Stages), s.Microbatches, s.Minibatches, flag(s.UnitTime),
			string(params), s.MakespanS, s.PeriodS, s.MicrobatchPeriodS, s.SteadyBubble, s.PeakBytes, s.VersionDifference,
			s.MaxStaleness, string(s.Result), s.Version).Scan(&id)
		if err != nil {
			return err
		}
		for _, st := range s.Stages {
			if _, err := tx.exec(ctx, `INSERT INTO simulation_stages (simulation_id, stage_index, first_layer,
				last_layer, device, checkpointed, busy_s, bubble, steady_bubble, peak_inflight, peak_activation_bytes,
				weight_versions, device_peak_bytes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				id, st.Index, st.First, st.Last, st.Device, flag(st.Checkpointed), st.BusyS, st.Bubble, st.SteadyBubble,
				st.PeakInflight, st.PeakActivationBytes, st.WeightVersions, st.DevicePeakBytes); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("record simulation for run %d: %w", s.RunID, err)
	}
	s.ID = id
	return id, nil
}

// SimulationResult returns the document of simulation id, or an error wrapping
// chainplan.ErrNotFound.
func (db *DB) SimulationResult(ctx context.Context, id int64) (json.RawMessage, error) {
	var doc string
	err := db.queryRow(ctx, "SELECT result_json FROM simulations WHERE simulation_id = ?", id).Scan(&doc)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("no simulation %d in %s", id, db.where)
	}
	if err != nil {
		return nil, fmt.Errorf("read simulation %d: %w", id, err)
	}
	return json.RawMessage(doc), nil
}

// Executions returns the measured executions of plan planID, oldest first (none for a plan
// that never ran, or does not exist).
func (db *DB) Executions(ctx context.Context, planID int64) ([]*Execution, error) {
	rows, err := db.query(ctx, `SELECT execution_id, plan_id, created_at, steps, step_time_s, peak_bytes,
		torch_version, device, host, metadata_json FROM executions WHERE plan_id = ? ORDER BY execution_id`, planID)
	if err != nil {
		return nil, fmt.Errorf("read executions of plan %d: %w", planID, err)
	}
	defer rows.Close()
	var out []*Execution
	for rows.Next() {
		var e Execution
		var created, meta string
		if err := rows.Scan(&e.ID, &e.PlanID, &created, &e.Steps, &e.StepTimeS, &e.PeakBytes, &e.TorchVersion,
			&e.Device, &e.Host, &meta); err != nil {
			return nil, fmt.Errorf("read executions of plan %d: %w", planID, err)
		}
		if e.CreatedAt, err = parseTime(created); err != nil {
			return nil, fmt.Errorf("read executions of plan %d: %w", planID, err)
		}
		if err := json.Unmarshal([]byte(meta), &e.Metadata); err != nil {
			return nil, fmt.Errorf("read executions of plan %d: execution %d: bad metadata_json: %w", planID, e.ID, err)
		}
		out = append(out, &e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read executions of plan %d: %w", planID, err)
	}
	return out, nil
}
