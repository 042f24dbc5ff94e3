package store_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chainplan/chainplan/store"
)

// BenchmarkIngest stores profiles of 1,000 stages with 20 repetitions (20,020 measurement
// rows and 1,001 stage rows each, the benchmark shape) into one database, one
// transaction per profile, and reports measurement rows per second. The profile is built
// before the clock starts; reading the Arrow file is timed by
// internal/cli's BenchmarkIngestFile.
//
//	go test -run='^$' -bench=Ingest -benchtime=20x ./store
func BenchmarkIngest(b *testing.B) {
	const stages, reps = 1000, 20
	ctx := context.Background()
	db := mustOpen(b, filepath.Join(b.TempDir(), "bench.db"))
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
}

// queryBench is the 10,000-run database of BenchmarkQueries, built once per process.
var queryBench struct {
	once sync.Once
	dir  string
	db   *store.DB
	err  error
}

// historyDB returns a database holding buildHistory(10,000 runs, 5 repetitions): about
// 120,000 stage rows, 600,000 measurements, 20,000 plans and 15,000 executions.
func historyDB(b *testing.B) *store.DB {
	queryBench.once.Do(func() {
		queryBench.dir, queryBench.err = os.MkdirTemp("", "chainplan-bench-")
		if queryBench.err != nil {
			return
		}
		queryBench.db, queryBench.err = store.Open(context.Background(), filepath.Join(queryBench.dir, "history.db"), store.Options{})
		if queryBench.err != nil {
			return
		}
		start := time.Now()
		buildHistory(b, queryBench.db, 10000, 5)
		b.Logf("built a 10,000-run history in %v", time.Since(start))
	})
	if queryBench.err != nil {
		b.Fatal(queryBench.err)
	}
	return queryBench.db
}

// cleanupBench removes the benchmark database; TestMain calls it.
func cleanupBench() {
	if queryBench.db != nil {
		queryBench.db.Close()
	}
	if queryBench.dir != "" {
		os.RemoveAll(queryBench.dir)
	}
}

// BenchmarkQueries times each example query of docs/sql.md, all rows read, on a history
// of 10,000 runs (target: under 20 ms each).
//
//	go test -run='^$' -bench=Queries ./store
func BenchmarkQueries(b *testing.B) {
	db := historyDB(b)
	for i, ex := range examples(b) {
		b.Run(string(rune('0'+(i+1)/10))+string(rune('0'+(i+1)%10)), func(b *testing.B) {
			for b.Loop() {
				_, rows, err := queryAll(context.Background(), db, ex.sql)
				if err != nil || len(rows) == 0 {
					b.Fatalf("%q: %d rows, %v", ex.title, len(rows), err)
				}
			}
		})
	}
}
