package store_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/store"
)

// damagedStore writes a SQLite store holding one profile of 60 stages × 20 repetitions
// (1,220 measurement rows over dozens of pages) and returns its file, closed.
func damagedStore(t *testing.T) (string, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "chainplan.db")
	db := mustOpen(t, path)
	mustIngest(t, db, sampleProfile(1, 60, 20))
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, data
}

// A store file that is truncated, whose header is overwritten, or that is no SQLite file
// fails to open with ErrDamaged, naming the file, and is left as it was; one with a
// damaged page in the middle opens, and the read that meets the page fails with
// ErrDamaged (before, such errors were internal errors: exit status 1).
func TestDamagedDatabase(t *testing.T) {
	path, clean := damagedStore(t)
	ctx := context.Background()
	const page = 4096
	tests := []struct {
		name   string
		damage func([]byte) []byte
	}{
		{"truncated", func(d []byte) []byte { return d[:len(d)/2+100] }},
		{"header overwritten", func(d []byte) []byte { copy(d, bytes.Repeat([]byte{0xa5}, 100)); return d }},
		{"not a SQLite file", func([]byte) []byte { return []byte(strings.Repeat("ARROW1\x00\x00", 600)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := tt.damage(bytes.Clone(clean))
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			for _, mustExist := range []bool{true, false} {
				db, err := store.Open(ctx, path, store.Options{MustExist: mustExist})
				if err == nil {
					db.Close()
					t.Fatalf("Open(MustExist=%v) of a damaged file succeeded", mustExist)
				}
				var fe *store.FaultError
				if !errors.Is(err, store.ErrDamaged) || !errors.As(err, &fe) || !strings.Contains(err.Error(), path) ||
					fe.Hint() == "" {
					t.Fatalf("Open(MustExist=%v) = %v, want ErrDamaged naming %s with a hint", mustExist, err, path)
				}
			}
			if now, _ := os.ReadFile(path); !bytes.Equal(now, data) {
				t.Fatal("opening the damaged file changed it")
			}
		})
	}
	t.Run("the last page", func(t *testing.T) {
		// The measurements, written last, end the file.
		data := bytes.Clone(clean)
		at := len(data) - page
		copy(data[at:at+page], bytes.Repeat([]byte{0xff}, page)) // 0xff is no b-tree page type
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		db := mustOpen(t, path)
		_, _, err := queryAll(ctx, db, "SELECT sum(fwd_time_s) FROM measurements")
		if !errors.Is(err, store.ErrDamaged) || !strings.Contains(err.Error(), path) {
			t.Fatalf("a query reading the damaged page: %v, want ErrDamaged naming %s", err, path)
		}
	})
}

// An empty file is no database to a command that reads (before, opening it wrote a new
// schema into it); ingest, which may create the database, makes it one.
func TestEmptyFileIsNoDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "empty.db")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, err := store.Open(ctx, path, store.Options{MustExist: true})
	if !errors.Is(err, chainplan.ErrNotFound) || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("Open(MustExist) of an empty file = %v, want ErrNotFound saying it is empty", err)
	}
	if st, err := os.Stat(path); err != nil || st.Size() != 0 {
		t.Fatalf("the empty file was changed: %v, %v", st, err)
	}
	db := mustOpen(t, path)
	mustIngest(t, db, sampleProfile(1, 4, 2))
	db.Close()
	db, err = store.Open(ctx, path, store.Options{MustExist: true})
	if err != nil {
		t.Fatalf("Open(MustExist) after an ingest: %v", err)
	}
	db.Close()
}

// A write that finds the disk full (SQLite's file capped with max_page_count, which fails
// as ENOSPC does, with SQLITE_FULL) fails with ErrDiskFull naming the file, keeps what
// the store held, and succeeds once there is room.
func TestDiskFull(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chainplan.db")
	db := mustOpen(t, path)
	ctx := context.Background()
	mustIngest(t, db, sampleProfile(1, 10, 2))
	pages, err := store.PageCount(db)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.SetMaxPageCount(db, pages+2); err != nil {
		t.Fatal(err)
	}
	big := sampleProfile(2, 200, 20)
	_, err = db.Ingest(ctx, big)
	var fe *store.FaultError
	if !errors.Is(err, store.ErrDiskFull) || !errors.As(err, &fe) || !strings.Contains(err.Error(), path) ||
		!strings.Contains(fe.Hint(), "free") {
		t.Fatalf("Ingest on a full disk = %v, want ErrDiskFull naming %s with a hint", err, path)
	}
	plan := &chainplan.Plan{Algo: "rotor", Feasible: true, Makespan: 1, Sequence: make([]chainplan.Op, 50000)}
	for i := range plan.Sequence {
		plan.Sequence[i] = chainplan.Op{Kind: chainplan.FAll, Stage: 1}
	}
	if _, err := db.RecordPlan(ctx, 1, plan, nil, "test"); !errors.Is(err, store.ErrDiskFull) {
		t.Fatalf("RecordPlan on a full disk = %v, want ErrDiskFull", err)
	}
	for q, want := range map[string]int64{"SELECT count(*) FROM runs": 1, "SELECT count(*) FROM measurements": 22,
		"SELECT count(*) FROM plans": 0} {
		if n := count(t, db, q); n != want {
			t.Fatalf("%s = %d after the failed writes, want %d", q, n, want)
		}
	}
	assertIntact(t, allBackends[0], db)
	if err := store.SetMaxPageCount(db, 1<<30); err != nil {
		t.Fatal(err)
	}
	if res, err := db.Ingest(ctx, big); err != nil || res.Existing {
		t.Fatalf("Ingest with room again = %+v, %v", res, err)
	}
}
