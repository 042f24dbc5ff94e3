package store

import (
	"context"
	"encoding/json"
	"fmt"
)

// Executions returns the executions of plan planID, oldest first (none for a plan that
// never ran or does not exist).
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
