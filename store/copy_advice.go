package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// copyAdvice copies src's advise and search3d results (advice, their candidates and
// measured runs, and the clusters they were made for) into dst, after the runs: one
// transaction of dst per result, oldest first. A result's run is found in dst by its
// content hash, its cluster by the cluster's (inserted when dst lacks it). A result dst
// holds already (the same kind, creation time and document) is not copied again, but
// those of its measurements dst lacks are. Ids are dst's own.
func copyAdvice(ctx context.Context, dst, src *DB, cols map[string][]string, stats *CopyStats) error {
	ids, err := selectRows(ctx, src, "advice", []string{"advice_id", "kind", "created_at"}, "1 = ?", 1)
	if err != nil {
		return err
	}
	for _, row := range ids {
		id := row[0].(int64)
		if err := copyOneAdvice(ctx, dst, src, cols, id, stats); err != nil {
			return fmt.Errorf("copy advice %d from %s to %s: %w", id, src.where, dst.where, err)
		}
	}
	return nil
}

func copyOneAdvice(ctx context.Context, dst, src *DB, cols map[string][]string, id int64, stats *CopyStats) error {
	adv, err := selectRows(ctx, src, "advice", cols["advice"], "advice_id = ?", id)
	if err != nil || len(adv) != 1 {
		return errors.Join(err, fmt.Errorf("advice %d vanished", id))
	}
	a := adv[0]
	col := func(name string) any { return a[slices.Index(cols["advice"], name)] }
	var runSHA sql.NullString
	if run := col("run_id"); run != nil {
		if err := src.queryRow(ctx, "SELECT content_sha256 FROM runs WHERE run_id = ?", run).Scan(&runSHA); err != nil {
			return fmt.Errorf("the run of advice %d: %w", id, err)
		}
	}
	cluster, err := selectRows(ctx, src, "clusters", cols["clusters"], "cluster_id = ?", col("cluster_id"))
	if err != nil || len(cluster) != 1 {
		return errors.Join(err, fmt.Errorf("the cluster of advice %d vanished", id))
	}
	candidates, err := selectRows(ctx, src, "advice_candidates", cols["advice_candidates"], "advice_id = ?", id)
	if err != nil {
		return err
	}
	measured, err := selectRows(ctx, src, "advice_measurements", cols["advice_measurements"], "advice_id = ?", id)
	if err != nil {
		return err
	}
	var copied, skipped, measurements int
	err = dst.write(ctx, func(tx txn) error {
		copied, skipped, measurements = 0, 0, 0
		var newID int64
		err := tx.queryRow(ctx, "SELECT advice_id FROM advice WHERE kind = ? AND created_at = ? AND result_json = ?",
			col("kind"), col("created_at"), col("result_json")).Scan(&newID)
		switch {
		case err == nil:
			skipped = 1
		case !errors.Is(err, sql.ErrNoRows):
			return err
		default:
			values := a
			if runSHA.Valid {
				var runID int64
				if err := tx.queryRow(ctx, "SELECT run_id FROM runs WHERE content_sha256 = ?", runSHA.String).Scan(&runID); err != nil {
					return fmt.Errorf("run %s of advice %d: %w", runSHA.String, id, err)
				}
				values = replaceColumn(cols["advice"], values, "run_id", runID)
			}
			clusterID, err := dstCluster(ctx, tx, cols["clusters"], cluster[0])
			if err != nil {
				return err
			}
			values = replaceColumn(cols["advice"], values, "cluster_id", clusterID)
			if newID, err = insertWithID(ctx, tx, "advice", "advice_id", cols["advice"], values); err != nil {
				return err
			}
			if err := insertCopies(ctx, tx, "advice_candidates", cols["advice_candidates"], "advice_id", newID, candidates); err != nil {
				return err
			}
			copied = 1
		}
		// The measurements dst lacks, each with an id of dst's.
		mCols := cols["advice_measurements"]
		missing, err := missingRows(ctx, tx, "advice_measurements", mCols, "advice_id", newID, measured)
		if err != nil {
			return err
		}
		for _, i := range missing {
			r := replaceColumn(mCols, measured[i], "advice_id", newID)
			if _, err := insertWithID(ctx, tx, "advice_measurements", "measurement_id", mCols, r); err != nil {
				return err
			}
			measurements++
		}
		return nil
	})
	if err != nil {
		return err
	}
	stats.Advice += copied
	stats.AdviceSkipped += skipped
	stats.AdviceMeasurements += measurements
	return nil
}

// dstCluster returns dst's id of the cluster whose row (values of cols, its id left out)
// src holds, inserting it when dst lacks it (found by content_sha256).
func dstCluster(ctx context.Context, tx txn, cols []string, values []any) (int64, error) {
	var id int64
	err := tx.queryRow(ctx, "SELECT cluster_id FROM clusters WHERE content_sha256 = ?",
		values[slices.Index(cols, "content_sha256")]).Scan(&id)
	if err == nil || !errors.Is(err, sql.ErrNoRows) {
		return id, err
	}
	return insertWithID(ctx, tx, "clusters", "cluster_id", cols, values)
}

// insertWithID inserts one row of table with a new id (max + 1, the writer's: these tables
// have no auto-increment) and returns it.
func insertWithID(ctx context.Context, tx txn, table, idColumn string, cols []string, values []any) (int64, error) {
	id, err := nextID(ctx, tx, table, idColumn)
	if err != nil {
		return 0, err
	}
	_, err = tx.exec(ctx, "INSERT INTO "+table+" ("+idColumn+", "+strings.Join(cols, ", ")+") VALUES (?"+repeat(", ?", len(cols))+")",
		append([]any{id}, values...)...)
	if err != nil {
		return 0, fmt.Errorf("insert into %s: %w", table, err)
	}
	return id, nil
}
