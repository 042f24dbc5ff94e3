package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/chainplan/chainplan"
)

// ErrBadDSN reports a PostgreSQL DSN that does not parse; the CLI reports it as bad input.
var ErrBadDSN = errors.New("chainplan: bad PostgreSQL DSN")

// ReaderRole is the PostgreSQL role users' queries run as (DB.Query): it may read every
// table and view of a store and write nothing. The first migration of a store creates it
// when the cluster lacks it, and every migration grants it SELECT on the store's tables.
// Connecting roles must be members of it to query (docs/sql.md, "PostgreSQL").
const ReaderRole = "chainplan_reader"

// versionTable holds a PostgreSQL store's schema version, as PRAGMA user_version and
// application_id do in a SQLite file.
const versionTable = "chainplan_schema"

// hasVersionTable is true when the current schema (the first of the search path that
// exists, where the store's tables are) holds versionTable.
const hasVersionTable = "EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = current_schema() AND tablename = '" +
	versionTable + "')"

// migrationLockKey is the first key of the advisory lock that serializes migrations of
// one schema (the second is the schema's name, hashed): "cpln".
const migrationLockKey = 0x63706c6e

// postgresBackend is the store in one schema of a PostgreSQL database: the first schema
// of the connection's search_path (public by default; a DSN may name another with
// ?search_path=NAME, which Open creates when missing).
type postgresBackend struct{}

var _ backend = postgresBackend{}

// openPostgres connects to the store dsn names. Without mustExist, a schema named by the
// DSN's search_path that does not exist yet is created.
func openPostgres(ctx context.Context, dsn string, mustExist bool, busy time.Duration) (*DB, error) {
	where := RedactDSN(dsn)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, dsnError(where, err)
	}
	// One short statement is enough to read a plan or write a run; the pool stays small
	// so that many processes on many hosts fit in the server's connections.
	conns := stdlib.OpenDB(*cfg)
	conns.SetMaxOpenConns(4)
	conns.SetMaxIdleConns(2)
	conns.SetConnMaxIdleTime(time.Minute)
	db := &DB{where: where, be: postgresBackend{}, w: conns, r: conns, busyTimeout: busy}
	if err := db.ensureSchema(ctx, cfg, mustExist); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// ensureSchema checks that the connection has a schema to work in, creating the one its
// search_path names first when it is missing (unless mustExist), and with mustExist that
// the schema holds a chainplan store.
func (db *DB) ensureSchema(ctx context.Context, cfg *pgx.ConnConfig, mustExist bool) error {
	var schema sql.NullString
	if err := db.r.QueryRowContext(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
		return fmt.Errorf("connect to %s: %w", db.where, err)
	}
	if !schema.Valid {
		name := firstSchema(cfg)
		if name == "" {
			return notFound("the search path of %s names no schema that exists (name one with ?search_path=NAME)", db.where)
		}
		if mustExist {
			return notFound("no schema %q in %s (ingest a profile first)", name, db.where)
		}
		_, err := db.w.ExecContext(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{name}.Sanitize())
		var pe *pgconn.PgError
		// Two processes creating it at once: one of them sees a unique violation.
		if err != nil && !(errors.As(err, &pe) && pe.Code == "23505") {
			return fmt.Errorf("create schema %q in %s: %w", name, db.where, err)
		}
		schema.String = name
	}
	if mustExist {
		var exists bool
		if err := db.r.QueryRowContext(ctx, "SELECT "+hasVersionTable).Scan(&exists); err != nil {
			return fmt.Errorf("read schema of %s: %w", db.where, err)
		}
		if !exists {
			return notFound("no chainplan store in schema %q of %s (ingest a profile first)", schema.String, db.where)
		}
	}
	return nil
}

// firstSchema returns the first schema of the connection's search_path setting ("$user"
// meaning the user), or "" when the DSN sets none.
func firstSchema(cfg *pgx.ConnConfig) string {
	path := cfg.RuntimeParams["search_path"]
	if path == "" {
		return ""
	}
	first := strings.TrimSpace(strings.Split(path, ",")[0])
	if strings.HasPrefix(first, `"`) && strings.HasSuffix(first, `"`) && len(first) >= 2 {
		first = strings.ReplaceAll(first[1:len(first)-1], `""`, `"`)
	} else {
		first = strings.ToLower(first)
	}
	if first == "$user" {
		return cfg.User
	}
	return first
}

func (postgresBackend) dialect() string { return "postgres" }

func (postgresBackend) bind(query string) string { return dollarPlaceholders(query) }

// retryable reports a serialization failure or a deadlock, after which PostgreSQL expects
// the transaction to run again. The store's writes run at READ COMMITTED and take row
// locks in one order, so neither is expected; the retry is the safety net.
func (postgresBackend) retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
}

func (postgresBackend) version(ctx context.Context, db *DB) (int, error) {
	var exists bool
	if err := db.r.QueryRowContext(ctx, "SELECT "+hasVersionTable).Scan(&exists); err != nil || !exists {
		return 0, err
	}
	var v int
	err := db.r.QueryRowContext(ctx, "SELECT version FROM "+versionTable).Scan(&v)
	return v, err
}

// lockSchema takes a transaction-scoped advisory lock on the schema's name: processes
// opening one store at once migrate it one after the other. A schema is chainplan's when
// it holds versionTable with the application "chainplan", or is empty.
func (postgresBackend) lockSchema(ctx context.Context, tx *sql.Tx) (int, error) {
	if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1, hashtext(current_schema()))", migrationLockKey); err != nil {
		return 0, fmt.Errorf("lock the schema: %w", err)
	}
	var hasTable bool
	var objects int
	err := tx.QueryRowContext(ctx, `SELECT `+hasVersionTable+`,
		(SELECT count(*) FROM pg_class c WHERE c.relnamespace = current_schema()::regnamespace)`).
		Scan(&hasTable, &objects)
	if err != nil {
		return 0, fmt.Errorf("read schema: %w", err)
	}
	if !hasTable {
		if objects != 0 {
			return 0, fmt.Errorf("%w: not a chainplan store (schema %q holds %d tables, views or indexes, and no %s table)",
				chainplan.ErrSchemaVersion, currentSchema(ctx, tx), objects, versionTable)
		}
		return 0, nil
	}
	var v int
	var app string
	if err := tx.QueryRowContext(ctx, "SELECT version, application FROM "+versionTable).Scan(&v, &app); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	if app != "chainplan" {
		return 0, fmt.Errorf("%w: not a chainplan store (%s names application %q)", chainplan.ErrSchemaVersion, versionTable, app)
	}
	return v, nil
}

func currentSchema(ctx context.Context, tx *sql.Tx) string {
	var s string
	_ = tx.QueryRowContext(ctx, "SELECT current_schema()").Scan(&s)
	return s
}

// setVersion records version in versionTable and lets ReaderRole read the store: the
// role is created when the cluster lacks it (the migrating role needs CREATEROLE then),
// granted USAGE on the schema and SELECT on every table and view, and granted to the
// migrating role itself when it may, so that its queries can run as the reader.
func (postgresBackend) setVersion(ctx context.Context, tx *sql.Tx, version int) error {
	stmts := []string{
		`CREATE TABLE IF NOT EXISTS ` + versionTable + ` (
			version     integer NOT NULL,
			application text    NOT NULL,
			migrated_at text    NOT NULL
		)`,
		"DELETE FROM " + versionTable,
		fmt.Sprintf("INSERT INTO %s VALUES (%d, 'chainplan', '%s')", versionTable, version, formatTime(time.Now())),
		// Role names are the cluster's: another store (or another process) may create it
		// at the same moment.
		`DO $$ BEGIN
			IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '` + ReaderRole + `') THEN
				CREATE ROLE ` + ReaderRole + ` NOLOGIN;
			END IF;
		EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
		END $$`,
		`DO $$ BEGIN
			EXECUTE format('GRANT USAGE ON SCHEMA %I TO ` + ReaderRole + `', current_schema());
		EXCEPTION WHEN insufficient_privilege THEN
			IF NOT has_schema_privilege('` + ReaderRole + `', current_schema(), 'USAGE') THEN
				RAISE;
			END IF;
		END $$`,
		`DO $$ BEGIN
			EXECUTE format('GRANT SELECT ON ALL TABLES IN SCHEMA %I TO ` + ReaderRole + `', current_schema());
		END $$`,
		`DO $$ BEGIN
			IF NOT pg_has_role(current_user, '` + ReaderRole + `', 'MEMBER') THEN
				EXECUTE format('GRANT ` + ReaderRole + ` TO %I', current_user);
			END IF;
		EXCEPTION WHEN insufficient_privilege THEN NULL;
		END $$`,
	}
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			var pe *pgconn.PgError
			if errors.As(err, &pe) && pe.Code == "42501" {
				return fmt.Errorf("%w (an administrator can create the reader role once: CREATE ROLE %s NOLOGIN; "+
					"GRANT %[2]s TO <the store's roles>; docs/sql.md)", err, ReaderRole)
			}
			return err
		}
	}
	return nil
}

func (postgresBackend) columns(ctx context.Context, db *DB, table string) ([]string, error) {
	if table == "" {
		return scanStrings(db.r.QueryContext(ctx, `SELECT table_name FROM information_schema.tables
			WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' AND table_name <> $1 ORDER BY 1`, versionTable))
	}
	return scanStrings(db.r.QueryContext(ctx, `SELECT column_name FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position`, table))
}
