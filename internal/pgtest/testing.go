package pgtest

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"
)

// shared is the server of this test process, opened on first use by NewStore.
var shared struct {
	sync.Mutex
	srv *Server
	err error
}

// server returns this process's server, opening it on first use.
func server() (*Server, error) {
	shared.Lock()
	defer shared.Unlock()
	if shared.srv == nil && shared.err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		shared.srv, shared.err = Open(ctx)
	}
	return shared.srv, shared.err
}

// Main runs a package's tests (m.Run) and then stops the server they started, if any; a
// TestMain calls os.Exit(pgtest.Main(m)). A package whose tests never call NewStore
// starts no server.
func Main(m *testing.M) int {
	code := m.Run()
	if err := Stop(); err != nil {
		os.Stderr.WriteString("pgtest: " + err.Error() + "\n")
	}
	return code
}

// Stop stops this process's server, if it started one.
func Stop() error {
	shared.Lock()
	defer shared.Unlock()
	if shared.srv == nil {
		return nil
	}
	err := shared.srv.Stop()
	shared.srv = nil
	return err
}

// NewStore returns the DSN of a new, empty schema on this process's server, dropped when
// the test ends. A test that cannot get a server fails: PostgreSQL is part of what the
// tests cover (make test installs it).
func NewStore(tb testing.TB) string {
	tb.Helper()
	srv := mustServer(tb)
	dsn, err := srv.Schema(context.Background())
	if err != nil {
		tb.Fatalf("PostgreSQL for the tests: %v", err)
	}
	tb.Cleanup(func() {
		if err := srv.DropSchema(context.Background(), dsn); err != nil {
			tb.Errorf("drop the test schema: %v", err)
		}
	})
	return dsn
}

// AdminDSN returns the superuser DSN of this process's server, for tests that set up
// roles; the test fails when there is no server.
func AdminDSN(tb testing.TB) string {
	tb.Helper()
	return mustServer(tb).AdminDSN
}

// mustServer returns this process's server; the test fails when there is none.
func mustServer(tb testing.TB) *Server {
	tb.Helper()
	srv, err := server()
	if err != nil {
		tb.Fatalf("PostgreSQL for the tests: %v", err)
	}
	return srv
}

// Schema returns the DSN of a new, empty schema on this process's server and the function
// that drops it, for stores that outlive one test (a benchmark's shared history).
func Schema(ctx context.Context) (dsn string, drop func() error, err error) {
	srv, err := server()
	if err != nil {
		return "", nil, err
	}
	dsn, err = srv.Schema(ctx)
	if err != nil {
		return "", nil, err
	}
	return dsn, func() error { return srv.DropSchema(context.Background(), dsn) }, nil
}
