// Package store keeps chainplan's history in one SQLite file: the runs (provenance of
// each profile), their stages and raw measurements, the plans computed from them, and the
// measured executions of those plans. docs/sql.md documents the schema and example queries.
//
// The database runs in WAL mode with a busy timeout, so readers never block and writers
// from several processes take turns instead of failing. Each DB holds one writer
// connection; every write is one transaction (BEGIN IMMEDIATE) retried while another
// process holds the lock. The schema is versioned (PRAGMA user_version) and migrated
// forward on Open by the SQL files embedded from migrations/.
//
// Ingest stores a profile in one transaction and is idempotent: a file's content hash is
// unique, so ingesting the same file twice returns the run stored the first time. Query
// runs arbitrary SQL on a separate read-only connection (mode=ro, query_only and an
// authorizer that allows reads only): a statement that would write fails with
// ErrReadOnly and changes nothing.
//
// This package is the only importer of github.com/mattn/go-sqlite3 in chainplan; it
// depends on the root package alone, so the CLI and the Python bindings convert profiles
// into its types.
package store
