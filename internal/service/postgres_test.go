package service_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/pgtest"
	"github.com/chainplan/chainplan/internal/service"
	"github.com/chainplan/chainplan/store"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// A DSN is a database like a path: DBPath returns it as given, and profiles written
// beside the database go to the home folder.
func TestDBPathDSN(t *testing.T) {
	const dsn = "postgres://ann:s3cret@db.lab/chainplan"
	const keywords = "host=db.lab user=ann password=s3cret dbname=chainplan"
	for _, db := range []string{dsn, keywords} {
		for _, flag := range []string{db, ""} {
			env := ""
			if flag == "" {
				env = db
			}
			if got, err := service.DBPath(flag, env, "/home/u"); err != nil || got != db {
				t.Errorf("DBPath(%q, %q) = %q, %v; want the DSN", flag, env, got, err)
			}
		}
	}
	// Neither a DSN nor a path: refused before anything is written beside it, without
	// echoing what may be a password (issue 33).
	const neither = "my dir/x=1 password=s3cret"
	for _, call := range []func() error{
		func() error { _, err := service.DBPath(neither, "", "/home/u"); return err },
		func() error { _, err := service.DBPath("", neither, "/home/u"); return err },
		func() error { _, err := service.DataDir(neither, "/home/u"); return err },
	} {
		if err := call(); !errors.Is(err, service.ErrBadInput) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%v, want ErrBadInput without the password", err)
		}
	}
	for db, want := range map[string]string{dsn: "/home/u/.chainplan", keywords: "/home/u/.chainplan", "/data/lab.db": "/data", "lab.db": "."} {
		if got, err := service.DataDir(db, "/home/u"); err != nil || got != want {
			t.Errorf("DataDir(%q) = %q, %v; want %q", db, got, err, want)
		}
	}
	if _, err := service.DataDir(dsn, ""); !errors.Is(err, service.ErrBadInput) || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("DataDir without a home: %v, want ErrBadInput without the password", err)
	}
	if _, err := service.Open(context.Background(), "postgres://ann:s3cret@db.lab:port/x", service.Options{}); !errors.Is(err, service.ErrBadInput) ||
		strings.Contains(err.Error(), "s3cret") {
		t.Errorf("Open of a bad DSN: %v, want ErrBadInput without the password", err)
	}
}

// The service's sequences run the same on PostgreSQL: ingest, plan a stored run at its
// smallest budget, record an execution; a read-only open of a schema without a store
// creates nothing.
func TestServiceOnPostgres(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.NewStore(t)
	if _, err := service.Open(ctx, dsn, service.Options{}); !errors.Is(err, chainplan.ErrNotFound) {
		t.Fatalf("read-only Open of an empty schema: %v, want ErrNotFound", err)
	}
	s, err := service.Open(ctx, dsn, service.Options{Create: true, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Store().Backend() != "postgres" || strings.Contains(s.Path(), "password") {
		t.Fatalf("Backend()=%q Path()=%q", s.Store().Backend(), s.Path())
	}
	res, _, err := s.Ingest(ctx, filepath.Join(profilesDir, "resnet_file.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	again, _, err := s.Ingest(ctx, filepath.Join(profilesDir, "resnet_file.arrow"))
	if err != nil || !again.Existing || again.RunID != res.RunID {
		t.Fatalf("second ingest = %+v, %v; want run %d again", again, err, res.RunID)
	}
	got, err := s.PlanRun(ctx, service.LatestRun, service.Request{Min: true, Source: service.SourceCLI})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.RecordExecution(ctx, got.PlanID, service.Execution{StepTimeS: 0.25, PeakBytes: got.Plan.PeakBytes}); err != nil {
		t.Fatal(err)
	}
	outcomes, err := s.Store().Outcomes(ctx, store.OutcomeFilter{RunID: res.RunID})
	if err != nil || len(outcomes) != 1 || outcomes[0].Executions != 1 || outcomes[0].MeasuredPeakBytes != got.Plan.PeakBytes {
		t.Fatalf("outcomes %+v, %v", outcomes, err)
	}
}

// MigrateStore copies a local file into a PostgreSQL store, twice without duplicates,
// and refuses to copy a database into itself.
func TestMigrateStore(t *testing.T) {
	ctx := context.Background()
	local := newService(t)
	if _, err := local.PlanRun(ctx, service.LatestRun, service.Request{Min: true, Source: service.SourceCLI}); err != nil {
		t.Fatal(err)
	}
	dsn := pgtest.NewStore(t)
	first, err := service.MigrateStore(ctx, local.Path(), dsn)
	if err != nil || first.Runs != 1 || first.Plans != 1 || first.Measurements == 0 {
		t.Fatalf("first copy %+v, %v", first, err)
	}
	second, err := service.MigrateStore(ctx, local.Path(), dsn)
	if err != nil || second != (store.CopyStats{RunsSkipped: 1, PlansSkipped: 1}) {
		t.Fatalf("second copy %+v, %v", second, err)
	}
	if _, err := service.MigrateStore(ctx, dsn, dsn); !errors.Is(err, service.ErrBadInput) {
		t.Fatalf("copy into itself: %v, want ErrBadInput", err)
	}
	if _, err := service.MigrateStore(ctx, filepath.Join(t.TempDir(), "missing.db"), dsn); !errors.Is(err, chainplan.ErrNotFound) {
		t.Fatalf("copy from a missing file: %v, want ErrNotFound", err)
	}
}
