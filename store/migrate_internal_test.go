package store

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/chainplan/chainplan/internal/pgtest"
)

// Both dialects hold the same migrations: the same numbers and names, so that a schema
// version means the same tables on either backend. A migration added for one dialect
// only fails here (docs/ARCHITECTURE.md, "How to change the store's schema").
func TestMigrationsMatchAcrossDialects(t *testing.T) {
	sets := migrations()
	lite, pg := sets["sqlite"], sets["postgres"]
	if len(lite) != len(pg) {
		t.Fatalf("sqlite has %d migrations, postgres %d: write each migration for both dialects", len(lite), len(pg))
	}
	for i := range lite {
		if lite[i].version != pg[i].version || lite[i].name != pg[i].name {
			t.Errorf("migration %d: sqlite/%04d_%s.sql against postgres/%04d_%s.sql", i+1,
				lite[i].version, lite[i].name, pg[i].version, pg[i].name)
		}
	}
	if SchemaVersion() != len(pg) {
		t.Fatalf("SchemaVersion()=%d, want %d", SchemaVersion(), len(pg))
	}
}

// openAt opens a new database of a backend migrated to version v only.
func openAt(t *testing.T, postgres bool, v int) *DB {
	t.Helper()
	ctx := context.Background()
	var db *DB
	var err error
	if postgres {
		db, err = openPostgres(ctx, pgtest.NewStore(t), false, DefaultBusyTimeout)
	} else {
		db, err = openSQLite(ctx, filepath.Join(t.TempDir(), "old.db"), false, DefaultBusyTimeout)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.migrateTo(ctx, v); err != nil {
		t.Fatal(err)
	}
	return db
}

// Migration 0003 rebuilds the documents of plans stored before it; both dialects rebuild
// the same document from the same columns.
func TestMigration0003RebuildsTheSameDocuments(t *testing.T) {
	ctx := context.Background()
	var docs []map[string]any
	for _, postgres := range []bool{false, true} {
		db := openAt(t, postgres, 2)
		err := db.write(ctx, func(tx txn) error {
			if _, err := tx.exec(ctx, `INSERT INTO runs (content_sha256, source_path, file_bytes, ingested_at, format,
				model_name, model_signature, torch_version, device, device_name, dtype, batch_size, input_shape, threads,
				timing_method, warmup_reps, reps, created_at, host, num_stages, has_loss, input_bytes, total_fwd_time_s,
				total_bwd_time_s, total_saved_bytes, total_param_bytes, metadata_json)
				VALUES ('00', 'p', 1, ?, 'chainplan.profile/v1', 'm', 's', '2.6.0', 'cpu', 'cpu', 'float32', 8, '[8,3]', 1,
				'perf_counter', 1, 3, ?, 'h', 2, 1, 96, 0.5, 1.25, 300, 0, '{}')`,
				formatTime(time.Unix(0, 0)), formatTime(time.Unix(0, 0))); err != nil {
				return err
			}
			_, err := tx.exec(ctx, `INSERT INTO plans (run_id, created_at, algo, params_json, budget_bytes, slots, feasible,
				makespan_s, peak_bytes, solve_ms, num_ops, sequence_json, chainplan_version)
				VALUES (1, ?, 'rotor', '{"slots":500}', 4096, 500, 1, 0.125, 4000, 1.5, 4,
				'[{"op":"F_all","stage":1},{"op":"F_all","stage":2},{"op":"B","stage":2},{"op":"B","stage":1}]', '0.1')`,
				formatTime(time.Unix(0, 0)))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.migrate(ctx); err != nil {
			t.Fatal(err)
		}
		p, err := db.Plan(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		if !p.Rebuilt || len(p.Plan.Sequence) != 4 || p.Plan.Makespan != 0.125 || !p.Plan.Feasible {
			t.Fatalf("postgres=%v: rebuilt plan %+v", postgres, p)
		}
		raw, err := db.PlanDocument(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		docs = append(docs, doc)
	}
	if !reflect.DeepEqual(docs[0], docs[1]) {
		t.Fatalf("rebuilt documents differ:\nsqlite   %v\npostgres %v", docs[0], docs[1])
	}
}

// Copy copies every table of the schema: a migration that adds a table must say how the
// table hangs off a run (copyTables).
func TestCopyKnowsEveryTable(t *testing.T) {
	for _, postgres := range []bool{false, true} {
		db := openAt(t, postgres, SchemaVersion())
		tables, err := db.columns(context.Background(), "")
		if err != nil {
			t.Fatal(err)
		}
		var known []string
		for _, c := range copyTables {
			known = append(known, c.table)
		}
		slices.Sort(known)
		if !slices.Equal(tables, known) {
			t.Errorf("postgres=%v: the schema's tables %v, Copy copies %v", postgres, tables, known)
		}
	}
}
