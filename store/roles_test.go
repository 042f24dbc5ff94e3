package store_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/chainplan/chainplan/internal/pgtest"
	"github.com/chainplan/chainplan/store"
)

// asRole returns dsn with the user replaced by a new login role, created by the server's
// superuser with the given options and dropped when the test ends, and the role.
func asRole(t *testing.T, dsn, options string) (string, string) {
	t.Helper()
	var b [4]byte
	_, _ = rand.Read(b[:])
	role := "r_" + hex.EncodeToString(b[:])
	adminExec(t, "CREATE ROLE "+role+" LOGIN "+options)
	t.Cleanup(func() {
		adminExec(t, "REASSIGN OWNED BY "+role+" TO "+pgtest.Role+"; DROP OWNED BY "+role+"; DROP ROLE "+role)
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role)
	return u.String(), role
}

// onlyPostgres skips a test of PostgreSQL's roles when -store-backends leaves it out.
func onlyPostgres(t *testing.T) {
	t.Helper()
	for _, b := range selectedBackends() {
		if b.postgres() {
			return
		}
	}
	t.Skip("PostgreSQL is not among -store-backends")
}

// A reader is a login role in chainplan_reader (docs/sql.md, "PostgreSQL"): it opens an
// existing store, queries it and reads runs, and any write fails, refused by the
// database; it cannot create a store either.
func TestPostgresReaderRole(t *testing.T) {
	onlyPostgres(t)
	ctx := context.Background()
	dsn := pgtest.NewStore(t)
	owner := mustOpen(t, dsn)
	if _, err := owner.Ingest(ctx, sampleProfile(1, 3, 2)); err != nil {
		t.Fatal(err)
	}
	readerDSN, _ := asRole(t, dsn, "IN ROLE "+store.ReaderRole)
	reader := mustOpen(t, readerDSN)
	if n := count(t, reader, "SELECT count(*) FROM measurements"); n != 8 {
		t.Fatalf("the reader counts %d measurements, want 8", n)
	}
	if runs, err := reader.Runs(ctx, store.RunFilter{}); err != nil || len(runs) != 1 {
		t.Fatalf("Runs as the reader: %d, %v", len(runs), err)
	}
	if _, err := reader.Ingest(ctx, sampleProfile(2, 3, 2)); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("Ingest as the reader: %v, want permission denied", err)
	}
	if _, err := reader.RecordPlan(ctx, 1, samplePlan(1000), nil, "v"); err == nil {
		t.Fatal("RecordPlan as the reader succeeded")
	}
	if _, _, err := queryAll(ctx, reader, "DELETE FROM runs"); !errors.Is(err, store.ErrReadOnly) {
		t.Fatalf("DELETE as the reader: %v, want ErrReadOnly", err)
	}
	if n := count(t, owner, "SELECT count(*) FROM runs"); n != 1 {
		t.Fatalf("%d runs after the reader's attempts, want 1", n)
	}
	// A reader cannot make a store of its own in a new schema.
	other := strings.Replace(readerDSN, "search_path=", "search_path=r_", 1)
	if _, err := store.Open(ctx, other, store.Options{}); err == nil {
		t.Fatal("a reader created a store")
	}
}

// A writer that is not in chainplan_reader and may not join it ingests, and its queries
// fail with a message saying which grant is missing.
func TestPostgresWriterOutsideReaderRole(t *testing.T) {
	onlyPostgres(t)
	ctx := context.Background()
	dsn := pgtest.NewStore(t)
	mustOpen(t, dsn).Close() // the store, and the reader role, exist
	writer, role := asRole(t, dsn, "")
	u, _ := url.Parse(dsn)
	schema := u.Query().Get("search_path")
	adminExec(t, "GRANT USAGE ON SCHEMA "+schema+" TO "+role+"; GRANT SELECT, INSERT ON ALL TABLES IN SCHEMA "+schema+" TO "+role)
	db := mustOpen(t, writer)
	if _, err := db.Ingest(ctx, sampleProfile(1, 3, 2)); err != nil {
		t.Fatalf("Ingest as a writer: %v", err)
	}
	_, _, err := queryAll(ctx, db, "SELECT 1")
	if err == nil || !strings.Contains(err.Error(), "GRANT "+store.ReaderRole+" TO") {
		t.Fatalf("Query by a writer outside the reader role: %v, want the missing grant named", err)
	}
}
