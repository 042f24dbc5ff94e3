// Package arrowtable writes a table of values, such as the rows of an SQL query, as an
// Arrow IPC file: what `chainplan sql --format arrow` prints and what chainplan.query
// hands to pyarrow. It is apart from the profile codec (package profilearrow) because query
// results have no fixed schema, and apart from the store, which stays free of Arrow.
package arrowtable

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Table is a rectangular set of values, such as the result of an SQL query: named columns
// and rows of the values database/sql returns (nil, int64, float64, bool, string, []byte,
// time.Time).
type Table struct {
	Columns []string
	Rows    [][]any
}

// Write writes t as an Arrow IPC file (what pyarrow.feather.read_table and
// pa.ipc.open_file read). Each column gets the narrowest type that holds all its values:
// int64 for integers and booleans, float64 when floats are mixed in, binary for blobs,
// utf8 otherwise (numbers formatted as text); a column of nulls only has the null type.
// Columns with the same name are written as they are; Arrow allows it.
func Write(w io.Writer, t *Table) error {
	fields := make([]arrow.Field, len(t.Columns))
	for j, name := range t.Columns {
		fields[j] = arrow.Field{Name: name, Type: columnType(t, j), Nullable: true}
	}
	s := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(memory.NewGoAllocator(), s)
	defer b.Release()
	b.Reserve(len(t.Rows))
	for j := range t.Columns {
		fb := b.Field(j)
		for i, row := range t.Rows {
			if j >= len(row) {
				return fmt.Errorf("write table: row %d has %d values, want %d", i, len(row), len(t.Columns))
			}
			appendValue(fb, row[j])
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	fw, err := ipc.NewFileWriter(w, ipc.WithSchema(s))
	if err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	if err := fw.Write(rec); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	if err := fw.Close(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	return nil
}

// columnType picks the Arrow type of column j (see Write).
func columnType(t *Table, j int) arrow.DataType {
	var ints, floats, blobs, texts bool
	for _, row := range t.Rows {
		if j >= len(row) {
			continue
		}
		switch row[j].(type) {
		case nil:
		case int64, bool:
			ints = true
		case float64:
			floats = true
		case []byte:
			blobs = true
		default:
			texts = true
		}
	}
	switch {
	case texts || blobs && (ints || floats):
		return arrow.BinaryTypes.String
	case blobs:
		return arrow.BinaryTypes.Binary
	case floats:
		return arrow.PrimitiveTypes.Float64
	case ints:
		return arrow.PrimitiveTypes.Int64
	}
	return arrow.Null
}

// appendValue appends v to a builder of the type columnType chose.
func appendValue(b array.Builder, v any) {
	if v == nil {
		b.AppendNull()
		return
	}
	switch b := b.(type) {
	case *array.Int64Builder:
		switch v := v.(type) {
		case int64:
			b.Append(v)
		case bool:
			b.Append(btoi(v))
		}
	case *array.Float64Builder:
		switch v := v.(type) {
		case int64:
			b.Append(float64(v))
		case float64:
			b.Append(v)
		case bool:
			b.Append(float64(btoi(v)))
		}
	case *array.BinaryBuilder:
		b.Append(v.([]byte))
	case *array.StringBuilder:
		b.Append(Text(v))
	default: // *array.NullBuilder: only nil reaches it
		b.AppendNull()
	}
}

// Text writes a value as database/sql returns it as text: numbers in the shortest form
// that reads back exactly, times in RFC 3339 (UTC), bytes as they are. The SQL command's
// CSV and table writers use it too, so a value reads alike in every output format.
func Text(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	case time.Time:
		return v.UTC().Format(time.RFC3339Nano)
	}
	return fmt.Sprint(v)
}

// Append adds a row of values as database/sql returns them, copying byte slices, which a
// driver may reuse for the next row.
func (t *Table) Append(vals []any) {
	r := make([]any, len(vals))
	for i, v := range vals {
		if b, ok := v.([]byte); ok {
			v = append([]byte(nil), b...)
		}
		r[i] = v
	}
	t.Rows = append(t.Rows, r)
}

func btoi(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
