package store

import (
	"context"
	"database/sql"
	"fmt"
)

// Outcome is a row of the plan_outcomes view: a plan's prediction beside what its
// executions measured (the mean step time, the largest peak). Executions is 0, and the
// measured values 0, for a plan that never ran.
type Outcome struct {
	PlanID            int64
	RunID             int64
	ModelName         string
	Algo              string
	BudgetBytes       int64
	PredictedTimeS    float64
	PredictedPeak     int64
	Executions        int64
	MeasuredTimeS     float64
	MeasuredPeakBytes int64
}

// OutcomeFilter selects the plans Outcomes returns: those of one run (RunID > 0), or of
// every run of one model (ModelName), or all plans when both are zero.
type OutcomeFilter struct {
	RunID     int64
	ModelName string
}

// Outcomes returns the prediction and the measurements of the plans f selects, oldest
// plan first.
func (db *DB) Outcomes(ctx context.Context, f OutcomeFilter) ([]Outcome, error) {
	q := `SELECT plan_id, run_id, model_name, algo, budget_bytes, predicted_time_s, predicted_peak_bytes,
		executions, measured_time_s, measured_peak_bytes FROM plan_outcomes WHERE 1 = 1`
	var args []any
	if f.RunID > 0 {
		q += " AND run_id = ?"
		args = append(args, f.RunID)
	}
	if f.ModelName != "" {
		q += " AND model_name = ?"
		args = append(args, f.ModelName)
	}
	rows, err := db.query(ctx, q+" ORDER BY plan_id", args...)
	if err != nil {
		return nil, fmt.Errorf("read plan outcomes: %w", err)
	}
	defer rows.Close()
	var out []Outcome
	for rows.Next() {
		var o Outcome
		var mt sql.NullFloat64
		var mp sql.NullInt64
		if err := rows.Scan(&o.PlanID, &o.RunID, &o.ModelName, &o.Algo, &o.BudgetBytes, &o.PredictedTimeS,
			&o.PredictedPeak, &o.Executions, &mt, &mp); err != nil {
			return nil, fmt.Errorf("read plan outcomes: %w", err)
		}
		o.MeasuredTimeS, o.MeasuredPeakBytes = mt.Float64, mp.Int64
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read plan outcomes: %w", err)
	}
	return out, nil
}
