// Package store keeps chainplan's history: the runs (provenance of each profile), their
// stages and raw measurements, the plans computed from them, and the measured executions
// of those plans. docs/sql.md documents the schema and example queries.
//
// One DB runs on either of two databases: a SQLite file (the default; Open takes its
// path) or a PostgreSQL store that a team shares (Open takes a postgres:// DSN). The
// tables, the migrations' numbers and the SQL of every read and write are the same on
// both; what differs is behind the backend interface (backend.go): how connections open,
// how migrations are locked and versioned, how a user's query is kept read-only, and how
// errors read. Migrations are numbered files per dialect, embedded from
// migrations/sqlite and migrations/postgres, and applied forward by Open.
//
// SQLite runs in WAL mode with a busy timeout, so readers never block and writers from
// several processes take turns; each write is one transaction (BEGIN IMMEDIATE) retried
// while another process holds the lock. PostgreSQL takes writers from many hosts at once;
// a transaction that loses a serialization conflict is retried.
//
// Ingest stores a profile in one transaction and is idempotent: a file's content hash is
// unique, so ingesting the same file twice (also at once, from two hosts) returns the run
// stored the first time. Query runs arbitrary SQL read-only, as the database enforces it:
// on SQLite a read-only connection with query_only and an authorizer that allows reads
// only; on PostgreSQL a read-only transaction as ReaderRole, which holds no write grant. A
// statement that would write fails with ErrReadOnly and changes nothing. Copy copies one
// store's history into another (chainplan migrate-store).
//
// This package is the only importer of github.com/mattn/go-sqlite3 and
// github.com/jackc/pgx in chainplan (internal/pgtest, the test server, aside); it depends
// on the root package and profile alone, so the CLI and the Python bindings convert
// profiles into its types.
package store
