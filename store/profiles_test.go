package store_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/profile"
	"github.com/chainplan/chainplan/store"
)

// TestIngestRoundTrip stores a small profile (multi-row INSERTs) and one of 151 stages and
// 453 measurements (PostgreSQL's COPY, bulk.go), and reads back what it stored.
func TestIngestRoundTrip(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		for _, size := range []struct{ stages, reps int }{{0, 4}, {150, 3}} {
			t.Run(fmt.Sprintf("%dx%d", size.stages, size.reps), func(t *testing.T) {
				ingestRoundTrip(t, b, sampleProfile(1, size.stages, size.reps))
			})
		}
	})
}

func ingestRoundTrip(t *testing.T, b testBackend, p *store.Profile) {
	ctx := context.Background()
	db := b.open(t)
	p.Stages[2].SavedBytes = profile.NullInt64{} // nulls survive
	p.Measurements[8].SavedBytes = profile.NullInt64{}
	// The exact memory model of migration 0006 survives too.
	exact := profile.Exact{SavesInput: profile.NullBool{Bool: false, Valid: true},
		SavesOutput:    profile.NullBool{Bool: true, Valid: true},
		RecomputeTimeS: profile.NullFloat64{Float64: 0.25, Valid: true}, RecomputeTmpBytes: nullInt(7),
		OptionsJSON: `[{"saved_bytes":3,"fwd_tmp_bytes":0,"recompute_time":0.1,"keep":[1]}]`,
		ReplayBytes: nullInt(5056)} // migration 0008
	p.Stages[1].Exact = exact
	p.Measurements[5].Exact = exact
	before := time.Now().Add(-time.Second)
	res, err := db.Ingest(ctx, p)
	if err != nil {
		t.Fatalf("Ingest: %v", err)
	}
	if res.Existing || res.RunID == 0 || res.Rows != len(p.Measurements) {
		t.Fatalf("Ingest=%+v, want a new run with %d rows", res, len(p.Measurements))
	}
	got, err := db.Run(ctx, res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if got.IngestedAt.Before(before) || got.IngestedAt.After(time.Now()) {
		t.Fatalf("IngestedAt=%v, want now", got.IngestedAt)
	}
	want := p.Run
	want.ID, want.IngestedAt = res.RunID, got.IngestedAt
	want.NumStages, want.HasLoss, want.InputBytes = len(p.Stages)-1, true, p.Stages[0].InBytes
	for _, s := range p.Stages {
		want.TotalFwdTimeS += s.FwdTimeS
		want.TotalBwdTimeS += s.BwdTimeS
		want.TotalParamBytes += s.ParamBytes
	}
	want.TotalSavedBytes = sql.NullInt64{} // stage 3's is null
	if math.Abs(got.TotalFwdTimeS-want.TotalFwdTimeS) > 1e-15 || math.Abs(got.TotalBwdTimeS-want.TotalBwdTimeS) > 1e-15 {
		t.Fatalf("total times %g, %g; want %g, %g", got.TotalFwdTimeS, got.TotalBwdTimeS, want.TotalFwdTimeS, want.TotalBwdTimeS)
	}
	want.TotalFwdTimeS, want.TotalBwdTimeS = got.TotalFwdTimeS, got.TotalBwdTimeS
	if !reflect.DeepEqual(*got, want) {
		t.Fatalf("Run()=%+v\nwant %+v", *got, want)
	}
	stages, err := db.Stages(ctx, res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(stages, p.Stages) {
		t.Fatalf("Stages() differ from what was ingested")
	}
	ms, err := db.Measurements(ctx, res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ms, p.Measurements) {
		t.Fatalf("Measurements() differ from what was ingested")
	}
}

func TestIngestIdempotent(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		db := b.open(t)
		first := mustIngest(t, db, sampleProfile(1, 0, 3))
		other := mustIngest(t, db, sampleProfile(2, 0, 3))
		again := mustIngest(t, db, sampleProfile(1, 0, 3))
		if !again.Existing || again.RunID != first.RunID || again.Rows != 0 {
			t.Fatalf("second Ingest=%+v, want Existing run %d", again, first.RunID)
		}
		if other.RunID == first.RunID {
			t.Fatalf("two files stored as one run %d", first.RunID)
		}
		if n := count(t, db, "SELECT count(*) FROM runs"); n != 2 {
			t.Fatalf("%d runs, want 2", n)
		}
		want := int64(len(sampleProfile(1, 0, 3).Measurements) + len(sampleProfile(2, 0, 3).Measurements))
		if n := count(t, db, "SELECT count(*) FROM measurements"); n != want {
			t.Fatalf("%d measurements, want %d", n, want)
		}
	})
}

func TestIngestRejects(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		tests := []struct {
			name   string
			mutate func(p *store.Profile)
			want   string
		}{
			{"bad hash", func(p *store.Profile) { p.Run.SHA256 = "abc" }, "not a hex sha-256"},
			{"no stages", func(p *store.Profile) { p.Stages, p.Measurements = nil, nil }, "no stages"},
			{"stages out of order", func(p *store.Profile) { p.Stages[0], p.Stages[1] = p.Stages[1], p.Stages[0] }, "position 1"},
			{"loss first", func(p *store.Profile) {
				loss := p.Stages[len(p.Stages)-1]
				p.Stages = append([]profile.StageSummary{loss}, p.Stages[:len(p.Stages)-1]...)
				for i := range p.Stages {
					p.Stages[i].Index = i + 1
				}
			}, "not the last stage"},
			{"only a loss", func(p *store.Profile) { p.Stages = p.Stages[len(p.Stages)-1:]; p.Stages[0].Index = 1 }, "no stage before the loss"},
			// Caught by the database: a measurement of a stage that does not exist. SQLite
			// says "FOREIGN KEY", PostgreSQL "foreign key".
			{"dangling measurement", func(p *store.Profile) { p.Measurements[len(p.Measurements)-1].StageIndex = 99 }, "foreign key"},
			{"negative time", func(p *store.Profile) { p.Stages[1].FwdTimeS = -1 }, "check constraint"},
		}
		// One database for all the cases (a PostgreSQL store costs a migration): each
		// case's profile is another file, and a failed ingest leaves the counts as they were.
		db := b.open(t)
		tables := []string{"runs", "stages", "measurements"}
		counts := func(t *testing.T) []int64 {
			var out []int64
			for _, table := range tables {
				out = append(out, count(t, db, "SELECT count(*) FROM "+table))
			}
			return out
		}
		for i, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				ctx := context.Background()
				before := counts(t)
				p := sampleProfile(3+i, 4, 2)
				tt.mutate(p)
				if _, err := db.Ingest(ctx, p); err == nil || !strings.Contains(strings.ToLower(err.Error()), tt.want) {
					t.Fatalf("Ingest error %v, want one mentioning %q", err, tt.want)
				}
				// Nothing of the failed profile is stored.
				if after := counts(t); !slices.Equal(after, before) {
					t.Fatalf("%v rows in %v after a failed ingest, %v before", after, tables, before)
				}
				// And the same file, fixed, goes in.
				if res, err := db.Ingest(ctx, sampleProfile(3+i, 4, 2)); err != nil || res.Existing {
					t.Fatalf("Ingest after a failure: %+v, %v", res, err)
				}
			})
		}
	})
}

func TestRuns(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		ctx := context.Background()
		db := b.open(t)
		for i := range 7 {
			if _, err := db.Ingest(ctx, sampleProfile(i, 0, 1)); err != nil {
				t.Fatal(err)
			}
		}
		tests := []struct {
			filter store.RunFilter
			want   []string // source paths, newest first
		}{
			{store.RunFilter{Limit: 3}, []string{"/data/profiles/resnet50-00006.arrow", "/data/profiles/vit-b16-00005.arrow",
				"/data/profiles/gpt2-small-00004.arrow"}},
			{store.RunFilter{ModelName: "gpt2-small"}, []string{"/data/profiles/gpt2-small-00004.arrow",
				"/data/profiles/gpt2-small-00001.arrow"}},
			{store.RunFilter{ModelName: "nope"}, nil},
			{store.RunFilter{Device: "cpu"}, []string{"/data/profiles/resnet50-00006.arrow"}},
			{store.RunFilter{ModelSignature: "sha256:gpt2-small-v0", DType: "float32"}, []string{
				"/data/profiles/gpt2-small-00004.arrow", "/data/profiles/gpt2-small-00001.arrow"}},
			{store.RunFilter{DType: "bfloat16", TorchVersion: "2.3.1", LossName: "cross_entropy", SavedMeasured: true},
				[]string{"/data/profiles/resnet50-00006.arrow", "/data/profiles/vit-b16-00005.arrow"}},
			{store.RunFilter{LossName: "mse"}, nil},
			{store.RunFilter{TorchVersion: "2.6.0"}, nil},
		}
		for _, tt := range tests {
			runs, err := db.Runs(ctx, tt.filter)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range runs {
				got = append(got, r.SourcePath)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Runs(%+v)=%v, want %v", tt.filter, got, tt.want)
			}
		}
		// A run with a stage whose saved size was not measured is no chain: SavedMeasured
		// leaves it out.
		unmeasured := sampleProfile(7, 0, 1) // a cpu run, as run 7 (index 6)
		unmeasured.Stages[2].SavedBytes = profile.NullInt64{}
		for i := range unmeasured.Measurements {
			if unmeasured.Measurements[i].StageIndex == 3 {
				unmeasured.Measurements[i].SavedBytes = profile.NullInt64{}
			}
		}
		if _, err := db.Ingest(ctx, unmeasured); err != nil {
			t.Fatal(err)
		}
		for measured, want := range map[bool]int{false: 2, true: 1} {
			runs, err := db.Runs(ctx, store.RunFilter{Device: "cpu", SavedMeasured: measured})
			if err != nil || len(runs) != want {
				t.Errorf("Runs(cpu, SavedMeasured %v): %d runs, %v; want %d", measured, len(runs), err, want)
			}
		}
		latest, err := db.LatestRunID(ctx)
		if err != nil || latest != 8 {
			t.Fatalf("LatestRunID()=%d, %v; want 8", latest, err)
		}
		if _, err := db.Run(ctx, 99); !errors.Is(err, chainplan.ErrNotFound) {
			t.Fatalf("Run(99) error %v, want ErrNotFound", err)
		}
		if _, err := db.Stages(ctx, 99); !errors.Is(err, chainplan.ErrNotFound) {
			t.Fatalf("Stages(99) error %v, want ErrNotFound", err)
		}
		if _, err := b.open(t).LatestRunID(ctx); !errors.Is(err, chainplan.ErrNotFound) {
			t.Fatalf("LatestRunID() on an empty database: error %v, want ErrNotFound", err)
		}
	})
}

// TestRunsByCallSignature: profile() finds the stored run of the same call by the
// call_signature key of its metadata (issue 20, item 10).
func TestRunsByCallSignature(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		testRunsByCallSignature(t, b.open(t))
	})
}

func testRunsByCallSignature(t *testing.T, db *store.DB) {
	ctx := context.Background()
	for i, call := range []string{"sha256:a", "sha256:b", "", "sha256:a"} {
		p := sampleProfile(i, 0, 1)
		if call != "" {
			p.Run.Metadata.Extra = map[string]string{profile.KeyCallSignature: call}
		}
		if _, err := db.Ingest(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	for call, want := range map[string][]string{
		"sha256:a": {"/data/profiles/resnet50-00003.arrow", "/data/profiles/resnet50-00000.arrow"},
		"sha256:b": {"/data/profiles/gpt2-small-00001.arrow"},
		"sha256:c": nil,
	} {
		runs, err := db.Runs(ctx, store.RunFilter{CallSignature: call})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range runs {
			got = append(got, r.SourcePath)
		}
		if !slices.Equal(got, want) {
			t.Errorf("Runs(CallSignature %q) = %v, want %v", call, got, want)
		}
	}
}
