package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// query runs a user's statement so that the database itself refuses any write, twice
// over: in a READ ONLY transaction, and as ReaderRole, which holds SELECT grants only. The
// role is set with set_config in a SELECT, which also takes the transaction's snapshot:
// from then on the transaction cannot be made read-write. The statement goes through the
// extended protocol, which takes one statement only, so nothing can follow it; and the
// transaction is rolled back when the rows are closed, settings included.
func (postgresBackend) query(ctx context.Context, db *DB, query string, args []any) (*Rows, error) {
	conn, err := db.r.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("query: %w", err)
	}
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("query: %w", err)
	}
	release := func() error {
		// Rolling back ends the read-only transaction; it changed nothing.
		err := tx.Rollback()
		if errors.Is(err, sql.ErrTxDone) {
			err = nil
		}
		return errors.Join(err, conn.Close())
	}
	if _, err := tx.ExecContext(ctx, "SELECT set_config('role', $1, true)", ReaderRole); err != nil {
		release()
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "42501" {
			return nil, fmt.Errorf("query: %w; read-only queries run as the role %s: an administrator grants it with "+
				"GRANT %[2]s TO <role> (docs/sql.md, \"PostgreSQL\")", err, ReaderRole)
		}
		return nil, fmt.Errorf("query: %w", err)
	}
	// DescribeExec: an unnamed statement, described then run (no statement cached for a
	// one-off query), in binary formats whatever the DSN's default_query_exec_mode says.
	rows, err := tx.QueryContext(ctx, query, append([]any{pgx.QueryExecModeDescribeExec}, args...)...)
	if err != nil {
		release()
		return nil, postgresQueryError(err)
	}
	types, err := rows.ColumnTypes()
	if err != nil {
		rows.Close()
		release()
		return nil, postgresQueryError(err)
	}
	convert := make([]func(any) any, len(types))
	for i, t := range types {
		convert[i] = postgresValue(t.DatabaseTypeName())
	}
	return newRows(rows, postgresQueryError, convert, release)
}

// postgresQueryError classifies an error of a user's query on PostgreSQL by its SQLSTATE:
// a write refused by the read-only transaction (class 25) or by the reader's privileges
// (42501) is ErrReadOnly; a statement PostgreSQL cannot parse, plan or evaluate (syntax
// and access rule violations, class 42; data exceptions, class 22; a violated constraint,
// class 23; a bad parameter count, 08P01) is ErrBadQuery.
func postgresQueryError(err error) error {
	if e := argumentCountError(err); e != nil {
		return e
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case strings.HasPrefix(pe.Code, "25") || pe.Code == "42501":
			return fmt.Errorf("%w (%v)", ErrReadOnly, err)
		case pe.Code == "42601" && strings.Contains(pe.Message, "multiple commands"):
			return fmt.Errorf("%w: %s (%v)", ErrBadQuery, severalStatements, err)
		case strings.HasPrefix(pe.Code, "42") || strings.HasPrefix(pe.Code, "22") ||
			strings.HasPrefix(pe.Code, "23") || pe.Code == "08P01" || pe.Code == "0A000":
			return fmt.Errorf("%w: %v", ErrBadQuery, err)
		}
		return fmt.Errorf("query: %w", err)
	}
	return fmt.Errorf("query: %w", err)
}

// postgresValue returns how a value of a PostgreSQL column type becomes one of the types
// Rows.Values documents (nil, int64, float64, string, []byte), as SQLite would give it:
// booleans are 0 or 1, numerics are integers when they have no fraction digits and
// floats otherwise, JSON is text, dates and times are ISO 8601 text. nil keeps the
// driver's value (integers, floats, text and bytea already are).
func postgresValue(typeName string) func(any) any {
	switch typeName {
	case "BOOL":
		return func(v any) any {
			if b, ok := v.(bool); ok {
				return flag(b)
			}
			return v
		}
	case "NUMERIC":
		return func(v any) any {
			s, ok := v.(string)
			if !ok {
				return v
			}
			if !strings.ContainsAny(s, ".eEN") { // N: NaN
				if n, err := strconv.ParseInt(s, 10, 64); err == nil {
					return n
				}
			}
			if f, err := strconv.ParseFloat(s, 64); err == nil {
				return f
			}
			return s
		}
	case "JSON", "JSONB", "XML":
		return func(v any) any {
			if b, ok := v.([]byte); ok {
				return string(b)
			}
			return v
		}
	case "DATE":
		return timeText("2006-01-02")
	case "TIMESTAMP":
		return timeText("2006-01-02 15:04:05.999999")
	case "TIMESTAMPTZ":
		return timeText("2006-01-02T15:04:05.999999Z07:00")
	}
	return nil
}

// timeText formats time values with layout, in UTC.
func timeText(layout string) func(any) any {
	return func(v any) any {
		if t, ok := v.(time.Time); ok {
			return t.UTC().Format(layout)
		}
		return v
	}
}
