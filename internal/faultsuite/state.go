package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/store"
)

// state is what a store holds, as far as the suite checks it: every run with its row
// counts and a digest of its measurements, and every plan with a digest of its document.
type state struct {
	runs  map[string]runState // by content hash
	plans map[int64]planState // by plan id
}

type runState struct {
	id                   int64
	stages, measurements int64
	fwdSum               float64 // the sum of the measurements' forward times
}

type planState struct {
	run    string // the run's content hash
	digest string // of algo, parameters and document: equal across stores for a copied plan
}

// has reports whether s holds the run of content hash sha.
func (s state) has(sha string) bool { _, ok := s.runs[sha]; return ok }

// plansOf returns the digests of the plans of run sha, as a multiset.
func (s state) plansOf(sha string) map[string]int {
	out := map[string]int{}
	for _, p := range s.plans {
		if p.run == sha {
			out[p.digest]++
		}
	}
	return out
}

// orphanQueries count rows whose parent is missing; each must be 0.
var orphanQueries = []string{
	"SELECT count(*) FROM stages s LEFT JOIN runs r ON r.run_id = s.run_id WHERE r.run_id IS NULL",
	"SELECT count(*) FROM measurements m LEFT JOIN stages s ON s.run_id = m.run_id AND s.stage_index = m.stage_index WHERE s.run_id IS NULL",
	"SELECT count(*) FROM stage_parallel p LEFT JOIN stages s ON s.run_id = p.run_id AND s.stage_index = p.stage_index WHERE s.run_id IS NULL",
	"SELECT count(*) FROM plans p LEFT JOIN runs r ON r.run_id = p.run_id WHERE r.run_id IS NULL",
	"SELECT count(*) FROM executions e LEFT JOIN plans p ON p.plan_id = e.plan_id WHERE p.plan_id IS NULL",
	"SELECT count(*) FROM bandwidths b LEFT JOIN runs r ON r.run_id = b.run_id WHERE r.run_id IS NULL",
	"SELECT count(*) FROM simulations s LEFT JOIN runs r ON r.run_id = s.run_id WHERE r.run_id IS NULL",
	"SELECT count(*) FROM simulation_stages x LEFT JOIN simulations s ON s.simulation_id = x.simulation_id WHERE s.simulation_id IS NULL",
	"SELECT count(*) FROM advice_candidates c LEFT JOIN advice a ON a.advice_id = c.advice_id WHERE a.advice_id IS NULL",
}

// readState reads db's state and checks that nothing in it is partial: on SQLite the
// file's integrity and foreign keys, on both no orphan row, every run with all its stages
// and measurements, every plan a whole document of its family.
func readState(ctx context.Context, db *store.DB) (state, error) {
	s := state{runs: map[string]runState{}, plans: map[int64]planState{}}
	var problems []error
	if db.Backend() == sqliteBackend {
		rows, err := queryAll(ctx, db, "PRAGMA integrity_check")
		if err != nil {
			return s, err
		}
		if len(rows) != 1 || rows[0][0] != "ok" {
			problems = append(problems, fmt.Errorf("integrity_check: %v", rows))
		}
		if rows, err = queryAll(ctx, db, "PRAGMA foreign_key_check"); err != nil {
			return s, err
		}
		if len(rows) != 0 {
			problems = append(problems, fmt.Errorf("foreign_key_check: %v", rows))
		}
	}
	for _, q := range orphanQueries {
		rows, err := queryAll(ctx, db, q)
		if err != nil {
			return s, err
		}
		if n := rows[0][0].(int64); n != 0 {
			problems = append(problems, fmt.Errorf("%d orphan rows: %s", n, q))
		}
	}
	rows, err := queryAll(ctx, db, `SELECT r.run_id, r.content_sha256, r.num_stages + r.has_loss, (r.num_stages + r.has_loss) * r.reps,
		(SELECT count(*) FROM stages s WHERE s.run_id = r.run_id),
		(SELECT count(*) FROM measurements m WHERE m.run_id = r.run_id),
		(SELECT coalesce(sum(m.fwd_time_s), 0) FROM measurements m WHERE m.run_id = r.run_id)
		FROM runs r`)
	if err != nil {
		return s, err
	}
	for _, r := range rows {
		rs := runState{id: r[0].(int64), stages: r[4].(int64), measurements: r[5].(int64), fwdSum: toFloat(r[6])}
		sha := r[1].(string)
		if rs.stages != r[2].(int64) || rs.measurements != r[3].(int64) {
			problems = append(problems, fmt.Errorf("run %d is partial: %d of %d stages, %d of %d measurements",
				rs.id, rs.stages, r[2], rs.measurements, r[3]))
		}
		s.runs[sha] = rs
	}
	rows, err = queryAll(ctx, db, `SELECT p.plan_id, r.content_sha256, p.algo, p.params_json, p.plan_json, p.num_ops
		FROM plans p JOIN runs r ON r.run_id = p.run_id`)
	if err != nil {
		return s, err
	}
	for _, r := range rows {
		id, doc := r[0].(int64), []byte(r[4].(string))
		if err := checkPlanDocument(doc, r[5].(int64)); err != nil {
			problems = append(problems, fmt.Errorf("plan %d: %w", id, err))
		}
		h := sha256.New()
		fmt.Fprintf(h, "%s\x00%s\x00%s", r[2], r[3], doc)
		s.plans[id] = planState{run: r[1].(string), digest: hex.EncodeToString(h.Sum(nil))}
	}
	return s, errors.Join(problems...)
}

// checkPlanDocument checks that a stored plan document is whole: it parses as a plan of
// its family, and a checkpointing plan has the num_ops operations its row says.
func checkPlanDocument(doc []byte, numOps int64) error {
	if pipeplan.IsPipelinePlan(doc) {
		_, err := pipeplan.Parse(doc)
		return err
	}
	p, err := chainplan.ParsePlan(doc)
	if err != nil {
		return err
	}
	if int64(len(p.Sequence)) != numOps {
		return fmt.Errorf("%d operations in the document, %d in the row", len(p.Sequence), numOps)
	}
	return nil
}

// lost returns what before holds and after lacks or holds differently: committed data a
// kill must never take away.
func lost(before, after state) error {
	var problems []error
	for sha, r := range before.runs {
		if a, ok := after.runs[sha]; !ok || !a.same(r) {
			problems = append(problems, fmt.Errorf("run %d (%s…) was %+v, now %+v (present: %v)", r.id, sha[:12], r, a, ok))
		}
	}
	for id, p := range before.plans {
		if a, ok := after.plans[id]; !ok || a != p {
			problems = append(problems, fmt.Errorf("plan %d changed or vanished (present: %v)", id, ok))
		}
	}
	return errors.Join(problems...)
}

// same compares two states of a run; the sums may differ in their last bits when the
// database adds the rows in another order.
func (r runState) same(o runState) bool {
	return r.id == o.id && r.stages == o.stages && r.measurements == o.measurements &&
		math.Abs(r.fwdSum-o.fwdSum) <= 1e-9*math.Abs(r.fwdSum)
}

// newRuns and newPlans return what after holds and before did not.
func newRuns(before, after state) []string {
	var out []string
	for sha := range after.runs {
		if !before.has(sha) {
			out = append(out, sha)
		}
	}
	return out
}

func newPlans(before, after state) []int64 {
	var out []int64
	for id := range after.plans {
		if _, ok := before.plans[id]; !ok {
			out = append(out, id)
		}
	}
	return out
}

// queryAll runs a read-only query and returns every row.
func queryAll(ctx context.Context, db *store.DB, q string) ([][]any, error) {
	rows, err := db.Query(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", strings.Join(strings.Fields(q), " "), err)
	}
	defer rows.Close()
	var out [][]any
	for rows.Next() {
		v := rows.Values()
		row := make([]any, len(v))
		for i, x := range v {
			if b, ok := x.([]byte); ok {
				x = string(b)
			}
			row[i] = x
		}
		out = append(out, row)
	}
	return out, rows.Err()
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case int64:
		return float64(x)
	}
	return 0
}
