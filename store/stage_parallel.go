package store

import (
	"context"
	"database/sql"

	"github.com/chainplan/chainplan/profile"
)

// stageParallelColumns are the columns of stage_parallel that Stages reads, in the order
// of parallelRow.dest.
const stageParallelColumns = `in_shape, out_shape, weight_count, bias_count, modules_json, batch_times_json`

// insertStageParallel stores the parallel fields of the stages that recorded any.
func insertStageParallel(ctx context.Context, tx txn, runID int64, stages []profile.StageSummary) error {
	var rec []*profile.StageSummary
	for i := range stages {
		if stages[i].Parallel.Recorded() {
			rec = append(rec, &stages[i])
		}
	}
	return insertRows(ctx, tx, "stage_parallel", "run_id, stage_index, "+stageParallelColumns, 8, len(rec),
		func(i int, dst []any) []any {
			p := &rec[i].Parallel
			return append(dst, runID, rec[i].Index, nullString(p.InShape), nullString(p.OutShape), p.WeightCount,
				p.BiasCount, nullString(p.Modules), nullString(p.BatchTimes))
		})
}

// nullString is s, or a null for "".
func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

// parallelRow scans the nullable columns of stage_parallel (all null without a row).
type parallelRow struct {
	in, out, modules, times sql.NullString
	weights, biases         profile.NullInt64
}

func (r *parallelRow) dest() []any {
	return []any{&r.in, &r.out, &r.weights, &r.biases, &r.modules, &r.times}
}

func (r *parallelRow) parallel() profile.Parallel {
	return profile.Parallel{InShape: r.in.String, OutShape: r.out.String, WeightCount: r.weights, BiasCount: r.biases,
		Modules: r.modules.String, BatchTimes: r.times.String}
}
