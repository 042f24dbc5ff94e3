package store_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chainplan/chainplan/internal/pgtest"
	"github.com/chainplan/chainplan/store"
)

// BenchmarkIngest stores profiles of 1,000 stages with 20 repetitions (20,020 measurement
// rows and 1,001 stage rows each, the benchmark shape) into one database of each
// backend, one transaction per profile, and reports measurement rows per second. The
// profile is built before the clock starts; reading the Arrow file is timed by
// internal/cli's BenchmarkIngestFile.
//
//	go test -run='^$' -bench=Ingest -benchtime=20x ./store
func BenchmarkIngest(b *testing.B) {
	for _, be := range selectedBackends() {
		b.Run(be.name, func(b *testing.B) {
			const stages, reps = 1000, 20
			ctx := context.Background()
			db := be.open(b)
			rows := 0
			var elapsed time.Duration
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				p := sampleProfile(i, stages, reps) // a new file (content hash) each time
				b.StartTimer()
				start := time.Now()
				res, err := db.Ingest(ctx, p)
				elapsed += time.Since(start)
				if err != nil || res.Existing {
					b.Fatalf("Ingest=%+v, %v", res, err)
				}
				rows += res.Rows
			}
			b.ReportMetric(float64(rows)/elapsed.Seconds(), "rows/s")
		})
	}
}

// historyDB is the 10,000-run database of BenchmarkQueries on one backend, built once per
// process.
type historyDB struct {
	once sync.Once
	db   *store.DB
	drop func() error // removes it
	err  error
}

var histories = map[string]*historyDB{"sqlite": {}, "postgres": {}}

// history returns the backend's database holding buildHistory(10,000 runs, 5
// repetitions): about 120,000 stage rows, 600,000 measurements, 20,000 plans and 15,000
// executions.
func history(b *testing.B, be testBackend) *store.DB {
	h := histories[be.name]
	h.once.Do(func() {
		var target string
		if be.postgres() {
			target, h.drop, h.err = pgtest.Schema(context.Background())
		} else {
			var dir string
			dir, h.err = os.MkdirTemp("", "chainplan-bench-")
			target, h.drop = filepath.Join(dir, "history.db"), func() error { return os.RemoveAll(dir) }
		}
		if h.err != nil {
			return
		}
		h.db, h.err = store.Open(context.Background(), target, store.Options{})
		if h.err != nil {
			return
		}
		start := time.Now()
		buildHistory(b, h.db, 10000, 5)
		b.Logf("built a 10,000-run history on %s in %v", be.name, time.Since(start))
	})
	if h.err != nil {
		b.Fatal(h.err)
	}
	return h.db
}

// cleanupBench removes the benchmark databases; TestMain calls it.
func cleanupBench() {
	for _, h := range histories {
		if h.db != nil {
			h.db.Close()
		}
		if h.drop != nil {
			h.drop()
		}
	}
}

// BenchmarkQueries times each example query of docs/sql.md, all rows read, on a history
// of 10,000 runs on each backend (target: under 20 ms each).
//
//	go test -run='^$' -bench=Queries ./store
func BenchmarkQueries(b *testing.B) {
	for _, be := range selectedBackends() {
		b.Run(be.name, func(b *testing.B) {
			db := history(b, be)
			for i, ex := range examples(b) {
				b.Run(fmt.Sprintf("%02d", i+1), func(b *testing.B) {
					for b.Loop() {
						_, rows, err := queryAll(context.Background(), db, ex.sql)
						if err != nil || len(rows) == 0 {
							b.Fatalf("%q: %d rows, %v", ex.title, len(rows), err)
						}
					}
				})
			}
		})
	}
}
