package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// CopyStats counts what Copy did.
type CopyStats struct {
	Runs         int `json:"runs"`          // runs copied
	RunsSkipped  int `json:"runs_skipped"`  // runs the destination held already (same content hash)
	Stages       int `json:"stages"`        // rows copied, of the runs copied
	Measurements int `json:"measurements"`  // rows copied, of the runs copied
	Plans        int `json:"plans"`         // plans copied, of every run
	Executions   int `json:"executions"`    // executions copied, of every plan
	Bandwidths   int `json:"bandwidths"`    // bandwidths copied, of every run
	PlansSkipped int `json:"plans_skipped"` // plans the destination held already
	Simulations  int `json:"simulations"`   // pipeline simulations copied, of every run
	// Advice counts the advise and search3d results copied (with their candidates and
	// clusters), AdviceSkipped those the destination held already, AdviceMeasurements
	// their measured runs copied.
	Advice             int `json:"advice"`
	AdviceSkipped      int `json:"advice_skipped"`
	AdviceMeasurements int `json:"advice_measurements"`
}

// copyTables are the tables Copy copies and how each hangs off a run; a table the schema
// gains must be added here (TestCopyKnowsEveryTable). id is the column the destination
// allocates anew, parent the column referring to the run or plan the row belongs to.
var copyTables = []struct{ table, id, parent string }{
	{"runs", "run_id", ""},
	{"stages", "", "run_id"},
	{"measurements", "", "run_id"},
	{"bandwidths", "bandwidth_id", "run_id"},
	{"plans", "plan_id", "run_id"},
	{"executions", "execution_id", "plan_id"},
	{"simulations", "simulation_id", "run_id"},
	{"simulation_stages", "", "simulation_id"},
	{"stage_parallel", "", "run_id"},
	{"clusters", "cluster_id", ""},
	{"advice", "advice_id", "run_id"},
	{"advice_candidates", "", "advice_id"},
	{"advice_measurements", "measurement_id", "advice_id"},
}

// Copy copies src's history into dst, run by run, oldest first, each run in one
// transaction of dst, so that an interrupted copy leaves whole runs only and copying again
// resumes it. A run dst holds already (the same profile file: content_sha256) is not
// copied again, but those of its plans, executions and bandwidths that dst lacks are: a
// plan is the same when its creation time, algorithm, parameters, version and document
// are, an execution when every measured column is, a bandwidth likewise. Copying twice
// therefore adds nothing the second time. Ids are dst's own: a run keeps its content and
// provenance, not its number. Both stores must be at the same schema version (Open
// migrates them to this build's).
func Copy(ctx context.Context, dst, src *DB) (CopyStats, error) {
	var stats CopyStats
	cols := map[string][]string{}
	for _, t := range copyTables {
		c, err := dst.columns(ctx, t.table)
		if err != nil {
			return stats, err
		}
		cols[t.table] = slices.DeleteFunc(c, func(name string) bool { return name == t.id })
	}
	rows, err := src.query(ctx, "SELECT run_id, content_sha256 FROM runs ORDER BY run_id")
	if err != nil {
		return stats, fmt.Errorf("copy: list runs of %s: %w", src.where, err)
	}
	type runRef struct {
		id  int64
		sha string
	}
	var runs []runRef
	for rows.Next() {
		var r runRef
		if err := rows.Scan(&r.id, &r.sha); err != nil {
			rows.Close()
			return stats, fmt.Errorf("copy: list runs of %s: %w", src.where, err)
		}
		runs = append(runs, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return stats, fmt.Errorf("copy: list runs of %s: %w", src.where, err)
	}
	for _, r := range runs {
		if err := copyRun(ctx, dst, src, cols, r.id, &stats); err != nil {
			return stats, fmt.Errorf("copy run %d (%s) from %s to %s: %w", r.id, r.sha, src.where, dst.where, err)
		}
	}
	return stats, copyAdvice(ctx, dst, src, cols, &stats)
}

// copyRun copies run id of src, and what hangs off it, in one transaction of dst.
func copyRun(ctx context.Context, dst, src *DB, cols map[string][]string, id int64, stats *CopyStats) error {
	read := func(table, where string, arg any) ([][]any, error) {
		return selectRows(ctx, src, table, cols[table], where, arg)
	}
	run, err := read("runs", "run_id = ?", id)
	if err != nil || len(run) != 1 {
		return errors.Join(err, fmt.Errorf("run %d vanished", id))
	}
	stages, err := read("stages", "run_id = ?", id)
	if err != nil {
		return err
	}
	measurements, err := read("measurements", "run_id = ?", id)
	if err != nil {
		return err
	}
	parallel, err := read("stage_parallel", "run_id = ?", id)
	if err != nil {
		return err
	}
	bandwidths, err := read("bandwidths", "run_id = ?", id)
	if err != nil {
		return err
	}
	plans, err := selectRows(ctx, src, "plans", append([]string{"plan_id"}, cols["plans"]...), "run_id = ?", id)
	if err != nil {
		return err
	}
	executions := map[int64][][]any{}
	for _, p := range plans {
		pid := p[0].(int64)
		if executions[pid], err = read("executions", "plan_id = ?", pid); err != nil {
			return err
		}
	}
	sims, err := readSimulations(ctx, src, cols, id)
	if err != nil {
		return err
	}
	var delta CopyStats
	err = dst.write(ctx, func(tx txn) error {
		delta = CopyStats{}
		runCols := cols["runs"]
		sha := run[0][slices.Index(runCols, "content_sha256")]
		var newID int64
		err := tx.queryRow(ctx, "SELECT run_id FROM runs WHERE content_sha256 = ?", sha).Scan(&newID)
		existing := err == nil
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if !existing {
			err := tx.queryRow(ctx, "INSERT INTO runs ("+strings.Join(runCols, ", ")+") VALUES (?"+repeat(", ?", len(runCols)-1)+
				") ON CONFLICT (content_sha256) DO NOTHING RETURNING run_id", run[0]...).Scan(&newID)
			if errors.Is(err, sql.ErrNoRows) { // stored by another writer meanwhile
				existing = true
				err = tx.queryRow(ctx, "SELECT run_id FROM runs WHERE content_sha256 = ?", sha).Scan(&newID)
			}
			if err != nil {
				return err
			}
		}
		if existing {
			delta.RunsSkipped = 1
		} else {
			delta.Runs = 1
			if err := insertCopies(ctx, tx, "stages", cols["stages"], "run_id", newID, stages); err != nil {
				return err
			}
			if err := insertCopies(ctx, tx, "measurements", cols["measurements"], "run_id", newID, measurements); err != nil {
				return err
			}
			if err := insertCopies(ctx, tx, "stage_parallel", cols["stage_parallel"], "run_id", newID, parallel); err != nil {
				return err
			}
			delta.Stages, delta.Measurements = len(stages), len(measurements)
		}
		n, err := insertMissing(ctx, tx, "bandwidths", cols["bandwidths"], "run_id", newID, bandwidths)
		if err != nil {
			return err
		}
		delta.Bandwidths = n
		planIDs, err := copyPlans(ctx, tx, cols, newID, plans, executions, &delta)
		if err != nil {
			return err
		}
		return copySimulations(ctx, tx, cols, newID, planIDs, sims, &delta)
	})
	if err != nil {
		return err
	}
	stats.Runs += delta.Runs
	stats.RunsSkipped += delta.RunsSkipped
	stats.Stages += delta.Stages
	stats.Measurements += delta.Measurements
	stats.Plans += delta.Plans
	stats.PlansSkipped += delta.PlansSkipped
	stats.Executions += delta.Executions
	stats.Bandwidths += delta.Bandwidths
	stats.Simulations += delta.Simulations
	return nil
}

// copyPlans inserts the plans (their source id first, then cols["plans"]) that run runID
// of dst lacks, and the executions of every plan that dst lacks. It returns the plan ids of
// dst by those of src.
func copyPlans(ctx context.Context, tx txn, cols map[string][]string, runID int64, plans [][]any,
	executions map[int64][][]any, delta *CopyStats) (map[int64]int64, error) {
	planCols := cols["plans"]
	have, err := selectRows(ctx, txReader{tx}, "plans", append([]string{"plan_id"}, planCols...), "run_id = ?", runID)
	if err != nil {
		return nil, err
	}
	ids := map[int64]int64{}
	byKey := map[string]int64{}
	for _, p := range have {
		byKey[rowKey(planCols, p[1:], "run_id")] = p[0].(int64)
	}
	for _, p := range plans {
		srcID, values := p[0].(int64), p[1:]
		newID, found := byKey[rowKey(planCols, values, "run_id")]
		if found {
			delta.PlansSkipped++
		} else {
			values = replaceColumn(planCols, values, "run_id", runID)
			err := tx.queryRow(ctx, "INSERT INTO plans ("+strings.Join(planCols, ", ")+") VALUES (?"+
				repeat(", ?", len(planCols)-1)+") RETURNING plan_id", values...).Scan(&newID)
			if err != nil {
				return nil, fmt.Errorf("insert plan: %w", err)
			}
			delta.Plans++
		}
		ids[srcID] = newID
		n, err := insertMissing(ctx, tx, "executions", cols["executions"], "plan_id", newID, executions[srcID])
		if err != nil {
			return nil, err
		}
		delta.Executions += n
	}
	return ids, nil
}

// insertCopies inserts rows (values of cols) into table with their parent column set to
// parentID.
func insertCopies(ctx context.Context, tx txn, table string, cols []string, parent string, parentID int64, rows [][]any) error {
	return insertRows(ctx, tx, table, strings.Join(cols, ", "), len(cols), len(rows), func(i int, dst []any) []any {
		return append(dst, replaceColumn(cols, rows[i], parent, parentID)...)
	})
}

// insertMissing inserts those of rows (values of cols) that table lacks among the rows of
// parent parentID, compared on every column but the parent, and returns how many.
func insertMissing(ctx context.Context, tx txn, table string, cols []string, parent string, parentID int64, rows [][]any) (int, error) {
	idx, err := missingRows(ctx, tx, table, cols, parent, parentID, rows)
	if err != nil || len(idx) == 0 {
		return 0, err
	}
	missing := make([][]any, len(idx))
	for i, j := range idx {
		missing[i] = rows[j]
	}
	return len(missing), insertCopies(ctx, tx, table, cols, parent, parentID, missing)
}

// missingRows returns the indices of those of rows (values of cols) that table lacks among
// the rows of parent parentID, compared on every column but the parent; of rows equal to
// each other, only the first. It is the one rule by which Copy decides that a row of a run
// or plan dst holds already is not copied again (bandwidths, executions, simulations,
// measured advice).
func missingRows(ctx context.Context, tx txn, table string, cols []string, parent string, parentID int64, rows [][]any) ([]int, error) {
	if len(rows) == 0 {
		return nil, nil
	}
	have, err := selectRows(ctx, txReader{tx}, table, cols, parent+" = ?", parentID)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, r := range have {
		seen[rowKey(cols, r, parent)] = true
	}
	var missing []int
	for i, r := range rows {
		if k := rowKey(cols, r, parent); !seen[k] {
			seen[k] = true
			missing = append(missing, i)
		}
	}
	return missing, nil
}

// rowKey identifies a row by its values of cols, the parent column left out.
func rowKey(cols []string, values []any, parent string) string {
	var b strings.Builder
	for i, c := range cols {
		if c != parent {
			fmt.Fprintf(&b, "%T:%v\x00", values[i], values[i])
		}
	}
	return b.String()
}

func replaceColumn(cols []string, values []any, col string, v any) []any {
	out := slices.Clone(values)
	if i := slices.Index(cols, col); i >= 0 {
		out[i] = v
	}
	return out
}

// reader runs the store's own reads: a DB's read connections, or a write transaction.
type reader interface {
	query(ctx context.Context, query string, args ...any) (*rows, error)
}

type txReader struct{ tx txn }

// query reads in the transaction, whose write marks its errors (rows with no DB).
func (r txReader) query(ctx context.Context, query string, args ...any) (*rows, error) {
	rs, err := r.tx.tx.QueryContext(ctx, r.tx.be.bind(query), args...)
	if err != nil {
		return nil, err
	}
	return &rows{rs, nil}, nil
}

// selectRows returns the values of cols of table's rows matching where (one ? for arg),
// in the order of cols, as the driver gives them.
func selectRows(ctx context.Context, r reader, table string, cols []string, where string, arg any) ([][]any, error) {
	// Every table has three columns or more; the first ones are its key.
	rows, err := r.query(ctx, "SELECT "+strings.Join(cols, ", ")+" FROM "+table+" WHERE "+where+
		" ORDER BY 1, 2, 3", arg)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", table, err)
	}
	defer rows.Close()
	var out [][]any
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, fmt.Errorf("read %s: %w", table, err)
		}
		out = append(out, vals)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", table, err)
	}
	return out, nil
}
