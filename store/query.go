package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
)

// Errors of Query. The CLI reports both as bad input (exit status 2).
var (
	// ErrReadOnly reports a statement that would change the database; it was not run, or
	// ran without changing anything.
	ErrReadOnly = errors.New("chainplan: query refused: queries are read-only and the statement would write or change a setting")
	// ErrBadQuery reports SQL that the database cannot prepare or run: a syntax error, an
	// unknown table, column or function, a wrong number of arguments.
	ErrBadQuery = errors.New("chainplan: bad query")
)

// Rows is the result of Query, read row by row like database/sql.Rows.
type Rows struct {
	rows     *sql.Rows
	cols     []string
	vals     []any
	ptrs     []any
	classify func(error) error // turns a database error into ErrBadQuery, ErrReadOnly or a wrapped one
	convert  []func(any) any   // per column, the value as Values returns it (nil: as scanned)
	closers  []func() error    // run by Close, in order, after the rows
	err      error
}

// newRows wraps the result of a user's query. classify maps the backend's errors; convert
// (optional) maps one value per column to the types Values documents; closers release
// what the rows hold (a transaction, a connection). On error, the closers run.
func newRows(rows *sql.Rows, classify func(error) error, convert []func(any) any, closers ...func() error) (*Rows, error) {
	cols, err := rows.Columns()
	if err != nil {
		rows.Close()
		for _, c := range closers {
			c()
		}
		return nil, classify(err)
	}
	r := &Rows{rows: rows, cols: cols, vals: make([]any, len(cols)), ptrs: make([]any, len(cols)),
		classify: classify, convert: convert, closers: closers}
	for i := range r.vals {
		r.ptrs[i] = &r.vals[i]
	}
	return r, nil
}

// Query runs exactly one read-only SQL statement (a trailing ";" and comments are fine)
// with its arguments and returns its rows. Values are nil, int64, float64, string or
// []byte. A statement that would write fails with ErrReadOnly; a text of several
// statements, arguments that do not match the placeholders one for one, and SQL the
// database rejects fail with ErrBadQuery, before anything runs. Close the rows when done.
//
// Placeholders: $1, $2, ... bind the first, second, ... argument on both databases;
// SQLite also takes ? (the next argument) and ?N. On SQLite a read-only connection,
// query_only and an authorizer refuse writes, and the statement runs prepared, alone
// (sqlite_statement.go); on PostgreSQL a read-only transaction run as the role
// chainplan_reader, which holds no write grants, does, and the extended protocol takes
// one statement only (postgres_query.go).
func (db *DB) Query(ctx context.Context, query string, args ...any) (*Rows, error) {
	rows, err := db.be.query(ctx, db, query, args)
	if err != nil {
		return nil, db.fault(err)
	}
	classify := rows.classify
	rows.classify = func(err error) error { return db.fault(classify(err)) }
	return rows, nil
}

// argumentCount is how database/sql (SQLite's prepared statements) and pgx say that the
// arguments do not match the placeholders, before anything runs.
var argumentCount = regexp.MustCompile(`expected (\d+) arguments, got (\d+)`)

// argumentCountError is ErrBadQuery saying how many placeholders the statement has and
// how many arguments it was given, for err that says they differ; nil for any other err.
func argumentCountError(err error) error {
	m := argumentCount.FindStringSubmatch(err.Error())
	if m == nil {
		return nil
	}
	return fmt.Errorf("%w: the statement has %s and %s given: each argument binds one placeholder ($1, $2, ...)",
		ErrBadQuery, counted(m[1], "placeholder"), counted(m[2], "argument"))
}

// counted writes "1 placeholder", "2 placeholders".
func counted(n, noun string) string {
	if n == "1" {
		return n + " " + noun
	}
	return n + " " + noun + "s"
}

// Columns returns the column names of the result.
func (r *Rows) Columns() []string { return r.cols }

// Next advances to the next row; it returns false at the end or on an error (see Err).
func (r *Rows) Next() bool {
	if r.err != nil || !r.rows.Next() {
		return false
	}
	if err := r.rows.Scan(r.ptrs...); err != nil {
		r.err = r.classify(err)
		return false
	}
	for i, c := range r.convert {
		if c != nil && r.vals[i] != nil {
			r.vals[i] = c(r.vals[i])
		}
	}
	return true
}

// Values returns the current row's values. The slice is reused by the next call to Next;
// a []byte value must be copied to be kept.
func (r *Rows) Values() []any { return r.vals }

// Err returns the error that ended the iteration, if any.
func (r *Rows) Err() error {
	if r.err != nil {
		return r.err
	}
	if err := r.rows.Err(); err != nil {
		return r.classify(err)
	}
	return nil
}

// Close releases the rows and what they hold (their connection, their transaction).
func (r *Rows) Close() error {
	errs := []error{r.rows.Close()}
	for _, c := range r.closers {
		errs = append(errs, c())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close query: %w", err)
	}
	return nil
}
