package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// runSimulations are the pipeline simulations of one source run: each row is the source
// simulation_id followed by cols["simulations"], with its stages by that id.
type runSimulations struct {
	rows   [][]any
	stages map[int64][][]any
}

func readSimulations(ctx context.Context, src *DB, cols map[string][]string, runID int64) (runSimulations, error) {
	sims := runSimulations{stages: map[int64][][]any{}}
	var err error
	sims.rows, err = selectRows(ctx, src, "simulations", append([]string{"simulation_id"}, cols["simulations"]...), "run_id = ?", runID)
	if err != nil {
		return sims, err
	}
	for _, r := range sims.rows {
		sid := r[0].(int64)
		if sims.stages[sid], err = selectRows(ctx, src, "simulation_stages", cols["simulation_stages"], "simulation_id = ?", sid); err != nil {
			return sims, err
		}
	}
	return sims, nil
}

// copySimulations inserts the simulations of run runID that dst lacks, with their stages.
// A simulation's plan becomes dst's copy of it (planIDs); one whose plan dst does not hold
// keeps no plan. Two simulations are the same when every column but the ids is.
func copySimulations(ctx context.Context, tx txn, cols map[string][]string, runID int64, planIDs map[int64]int64,
	sims runSimulations, delta *CopyStats) error {
	if len(sims.rows) == 0 {
		return nil
	}
	simCols := cols["simulations"]
	// Compared as dst will hold them: in run runID, with dst's copy of their plan.
	values := make([][]any, len(sims.rows))
	for i, r := range sims.rows {
		v := replaceColumn(simCols, r[1:], "run_id", runID)
		var plan any
		if p, ok := v[slices.Index(simCols, "plan_id")].(int64); ok {
			if dstPlan, found := planIDs[p]; found {
				plan = dstPlan
			}
		}
		values[i] = replaceColumn(simCols, v, "plan_id", plan)
	}
	missing, err := missingRows(ctx, tx, "simulations", simCols, "run_id", runID, values)
	if err != nil {
		return err
	}
	for _, i := range missing {
		var newID int64
		err := tx.queryRow(ctx, "INSERT INTO simulations ("+strings.Join(simCols, ", ")+") VALUES (?"+
			repeat(", ?", len(simCols)-1)+") RETURNING simulation_id", values[i]...).Scan(&newID)
		if err != nil {
			return fmt.Errorf("insert simulation: %w", err)
		}
		srcID := sims.rows[i][0].(int64)
		if err := insertCopies(ctx, tx, "simulation_stages", cols["simulation_stages"], "simulation_id", newID, sims.stages[srcID]); err != nil {
			return err
		}
		delta.Simulations++
	}
	return nil
}
