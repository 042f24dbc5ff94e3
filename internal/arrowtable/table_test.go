package arrowtable_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/chainplan/chainplan/internal/arrowtable"
)

func TestWrite(t *testing.T) {
	when := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	tab := &arrowtable.Table{
		Columns: []string{"i", "f", "mixed", "s", "blob", "none", "flag", "when", "blobtext"},
		Rows: [][]any{
			{int64(1), 1.5, int64(2), "a", []byte{0, 1}, nil, true, when, []byte("x")},
			{nil, int64(3), 2.5, nil, nil, nil, false, nil, "y"},
		},
	}
	var buf bytes.Buffer
	if err := arrowtable.Write(&buf, tab); err != nil {
		t.Fatal(err)
	}
	r, err := ipc.NewFileReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	wantTypes := []arrow.DataType{arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Float64, arrow.PrimitiveTypes.Float64,
		arrow.BinaryTypes.String, arrow.BinaryTypes.Binary, arrow.Null, arrow.PrimitiveTypes.Int64, arrow.BinaryTypes.String,
		arrow.BinaryTypes.String}
	for i, f := range r.Schema().Fields() {
		if f.Name != tab.Columns[i] || !arrow.TypeEqual(f.Type, wantTypes[i]) {
			t.Fatalf("column %d: %s %s, want %s %s", i, f.Name, f.Type, tab.Columns[i], wantTypes[i])
		}
	}
	rec, err := r.RecordBatchAt(0)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	if rec.NumRows() != 2 {
		t.Fatalf("%d rows, want 2", rec.NumRows())
	}
	if c := rec.Column(0).(*array.Int64); c.Value(0) != 1 || !c.IsNull(1) {
		t.Fatalf("column i = %v", c)
	}
	if c := rec.Column(1).(*array.Float64); c.Value(0) != 1.5 || c.Value(1) != 3 {
		t.Fatalf("column f = %v", c)
	}
	if c := rec.Column(2).(*array.Float64); c.Value(0) != 2 || c.Value(1) != 2.5 {
		t.Fatalf("column mixed = %v", c)
	}
	if c := rec.Column(4).(*array.Binary); !bytes.Equal(c.Value(0), []byte{0, 1}) || !c.IsNull(1) {
		t.Fatalf("column blob = %v", c)
	}
	if c := rec.Column(6).(*array.Int64); c.Value(0) != 1 || c.Value(1) != 0 {
		t.Fatalf("column flag = %v", c)
	}
	if c := rec.Column(7).(*array.String); c.Value(0) != "2025-06-01T12:00:00Z" {
		t.Fatalf("column when = %v", c)
	}
	if c := rec.Column(8).(*array.String); c.Value(0) != "x" || c.Value(1) != "y" {
		t.Fatalf("column blobtext = %v", c)
	}
	bad := &arrowtable.Table{Columns: []string{"a", "b"}, Rows: [][]any{{int64(1)}}}
	if err := arrowtable.Write(&bytes.Buffer{}, bad); err == nil || !strings.Contains(err.Error(), "row 0 has 1 values") {
		t.Fatalf("Write of a short row: %v", err)
	}
}
