package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// bulkCopier is a backend with a faster way than multi-row INSERTs to write many rows in
// a write transaction: PostgreSQL's COPY. insertRows uses it where the backend has one.
type bulkCopier interface {
	// copyRows writes n rows of the named columns into table on conn, inside the
	// transaction open on it; values(i, dst) appends row i's values to dst.
	copyRows(ctx context.Context, conn *sql.Conn, table string, columns []string, n int,
		values func(i int, dst []any) []any) error
}

var _ bulkCopier = postgresBackend{}

// copyRows streams the rows with COPY FROM STDIN in pgx's binary format: one round trip
// for the whole table instead of one per 128-row INSERT, and no SQL text to parse. It runs
// on the transaction's own connection (database/sql lends it through Conn.Raw between the
// transaction's statements), so the rows commit or roll back with the rest of the write.
func (postgresBackend) copyRows(ctx context.Context, conn *sql.Conn, table string, columns []string, n int,
	values func(i int, dst []any) []any) error {
	return conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("copy into %s: the connection is a %T, not pgx's", table, dc)
		}
		i := 0
		row := make([]any, 0, len(columns))
		src := pgx.CopyFromFunc(func() ([]any, error) {
			if i == n {
				return nil, nil
			}
			if testHook != nil && i == n/2 {
				testHook("insert " + table + " half")
			}
			row = values(i, row[:0])
			i++
			return row, nil
		})
		got, err := c.Conn().CopyFrom(ctx, pgx.Identifier{table}, columns, src)
		if err != nil {
			return fmt.Errorf("copy into %s (row %d of %d): %w", table, i, n, err)
		}
		if got != int64(n) {
			return fmt.Errorf("copy into %s: %d rows written of %d", table, got, n)
		}
		return nil
	})
}

// columnList splits one of the store's column lists ("a, b,\n\tc") into names.
func columnList(columns string) []string {
	parts := strings.Split(columns, ",")
	for i, p := range parts {
		parts[i] = strings.TrimSpace(p)
	}
	return parts
}
