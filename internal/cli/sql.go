package cli

import (
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/chainplan/chainplan/internal/arrowtable"
	"github.com/chainplan/chainplan/store"
)

func newSQLCmd(e *env) *cobra.Command {
	var format, output string
	cmd := &cobra.Command{
		Use:   "sql QUERY [ARG...]",
		Short: "Run a read-only SQL query on the profile database",
		Long: `Run one SQL statement on the profile database and print its result. A trailing ;
and comments are fine; a second statement is refused (exit status 2) and nothing runs.
Each ARG binds one placeholder, as a number when it reads as one: $1, $2, ... are the
first, second, ... ARG on both databases (SQLite also takes ?, the next ARG). An ARG
without its placeholder, or a placeholder without its ARG, is refused (exit status 2).

Queries are strictly read-only, and the database itself refuses writes. SQLite: the file
is opened read-only, with query_only and an authorizer that admits reads only.
PostgreSQL: the query runs in a READ ONLY transaction as the role chainplan_reader,
which holds SELECT grants only, one statement at a time. A statement that would write
is refused (exit status 2) and changes nothing. docs/sql.md documents the tables and
views (runs, stages, measurements, plans, executions, bandwidths; run_summary,
stage_history, plan_outcomes), ten example queries that run unchanged on both databases,
and where the SQL dialects differ.

Formats: table (default), csv, json (an array of objects), arrow (an Arrow IPC file, as
pyarrow.feather.read_table reads it).`,
		Example: `  chainplan sql "SELECT * FROM run_summary ORDER BY created_at DESC LIMIT 5"
  chainplan sql "SELECT stage_name, bwd_time_s FROM stage_history WHERE model_name = $1" resnet50
  chainplan sql "SELECT * FROM runs WHERE run_id = ?" 3
  chainplan --db postgres://ann@db.lab/chainplan sql "SELECT * FROM plan_outcomes"
  chainplan sql --format arrow -o stages.arrow "SELECT * FROM stages WHERE run_id = 3"`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("sql needs a QUERY (see chainplan sql --help and docs/sql.md)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSQL(cmd, e, args[0], args[1:], format, output)
		},
	}
	cmd.Flags().StringVar(&format, "format", "table", "output format: table, csv, json or arrow")
	cmd.Flags().StringVarP(&output, "output", "o", "", "write to this file instead of standard output")
	return cmd
}

func runSQL(cmd *cobra.Command, e *env, query string, rawArgs []string, format, output string) error {
	if err := checkFormat(format, "table", "csv", "json", "arrow"); err != nil {
		return err
	}
	db, err := openStore(cmd)
	if err != nil {
		return err
	}
	defer db.Close()
	args := make([]any, len(rawArgs))
	for i, a := range rawArgs {
		args[i] = bindValue(a)
	}
	rows, err := db.Store().Query(cmd.Context(), query, args...)
	if err != nil {
		return queryFailure(err)
	}
	defer rows.Close()
	w := e.stdout
	if output != "" {
		f, err := os.Create(output)
		if err != nil {
			return &usageError{err}
		}
		defer f.Close()
		w = f
	}
	rw := newResultWriter(w, format)
	if err := rw.begin(rows.Columns()); err != nil {
		return err
	}
	for rows.Next() {
		if err := rw.row(rows.Values()); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return queryFailure(err)
	}
	return rw.end()
}

// queryFailure makes the query errors a user causes bad input (exit status 2).
func queryFailure(err error) error {
	if errors.Is(err, store.ErrReadOnly) || errors.Is(err, store.ErrBadQuery) {
		return &usageError{err}
	}
	return err
}

// bindValue turns a command-line argument into a query parameter: an int64 or float64
// when it reads as one, the string otherwise.
func bindValue(s string) any {
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
		return f
	}
	return s
}

// resultWriter writes a result set in one format. row may keep nothing of vals past the
// call: the slice is reused.
type resultWriter interface {
	begin(cols []string) error
	row(vals []any) error
	end() error
}

// newResultWriter returns the writer of a format checkFormat accepted.
func newResultWriter(w io.Writer, format string) resultWriter {
	switch format {
	case "csv":
		return &csvResult{w: csv.NewWriter(w)}
	case "json":
		return &jsonResult{w: w}
	case "arrow":
		return &arrowResult{w: w}
	}
	return &tableResult{w: w}
}

// tableResult aligns columns for reading; NULL is shown as NULL.
type tableResult struct {
	w    io.Writer
	cols []string
	rows [][]string
}

func (t *tableResult) begin(cols []string) error { t.cols = cols; return nil }

func (t *tableResult) row(vals []any) error {
	r := make([]string, len(vals))
	for i, v := range vals {
		r[i] = tableCell(v)
	}
	t.rows = append(t.rows, r)
	return nil
}

func (t *tableResult) end() error {
	tw := tabwriter.NewWriter(t.w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(t.cols, "\t"))
	for _, r := range t.rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(t.rows) != 1 {
		_, err := fmt.Fprintf(t.w, "(%d rows)\n", len(t.rows))
		return err
	}
	_, err := fmt.Fprintln(t.w, "(1 row)")
	return err
}

// tableCell writes a value on one line: text with its control characters escaped, blobs
// as x'hex'.
func tableCell(v any) string {
	switch v := v.(type) {
	case nil:
		return "NULL"
	case string:
		if strings.ContainsAny(v, "\t\n\r") {
			q := strconv.Quote(v)
			return q[1 : len(q)-1]
		}
		return v
	case []byte:
		return "x'" + hex.EncodeToString(v) + "'"
	}
	return arrowtable.Text(v)
}

// csvResult writes RFC 4180 CSV with a header; NULL is an empty field, blobs \x-prefixed hex.
type csvResult struct {
	w   *csv.Writer
	rec []string
}

func (c *csvResult) begin(cols []string) error { return c.w.Write(cols) }

func (c *csvResult) row(vals []any) error {
	c.rec = c.rec[:0]
	for _, v := range vals {
		switch v := v.(type) {
		case nil:
			c.rec = append(c.rec, "")
		case []byte:
			c.rec = append(c.rec, `\x`+hex.EncodeToString(v))
		default:
			c.rec = append(c.rec, arrowtable.Text(v))
		}
	}
	return c.w.Write(c.rec)
}

func (c *csvResult) end() error {
	c.w.Flush()
	return c.w.Error()
}

// jsonResult writes an array of objects keyed by column name, in column order.
type jsonResult struct {
	w    io.Writer
	keys [][]byte
	n    int
}

func (j *jsonResult) begin(cols []string) error {
	for _, c := range cols {
		k, _ := json.Marshal(c) // a string always marshals
		j.keys = append(j.keys, k)
	}
	_, err := io.WriteString(j.w, "[")
	return err
}

func (j *jsonResult) row(vals []any) error {
	var b strings.Builder
	if j.n > 0 {
		b.WriteString(",")
	}
	b.WriteString("\n  {")
	for i, v := range vals {
		if i > 0 {
			b.WriteString(", ")
		}
		b.Write(j.keys[i])
		b.WriteString(": ")
		if f, ok := v.(float64); ok && (math.IsInf(f, 0) || math.IsNaN(f)) {
			v = nil // JSON has no infinities; SQLite has no NaN
		}
		val, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("write json: %w", err)
		}
		b.Write(val)
	}
	b.WriteString("}")
	j.n++
	_, err := io.WriteString(j.w, b.String())
	return err
}

func (j *jsonResult) end() error {
	if j.n > 0 {
		_, err := io.WriteString(j.w, "\n]\n")
		return err
	}
	_, err := io.WriteString(j.w, "]\n")
	return err
}

// arrowResult collects the rows and writes an Arrow IPC file (arrowtable.Write).
type arrowResult struct {
	w io.Writer
	t arrowtable.Table
}

func (a *arrowResult) begin(cols []string) error { a.t.Columns = cols; return nil }

func (a *arrowResult) row(vals []any) error { a.t.Append(vals); return nil }

func (a *arrowResult) end() error { return arrowtable.Write(a.w, &a.t) }
