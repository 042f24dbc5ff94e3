package profilearrow

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/chainplan/chainplan/profile"
)

// smallProfile is one stage, two repetitions.
func smallProfile() *Profile {
	row := profile.Row{StageIndex: 1, StageName: "l", StageKind: profile.KindStage, Measures: profile.Measures{
		FwdTimeS: 1, BwdTimeS: 2, InBytes: 8, OutBytes: 8,
		SavedBytes: known(8), FwdTmpBytes: known(0), BwdTmpBytes: known(0), ParamBytes: 4}}
	row2 := row
	row2.Rep = 1
	return &Profile{
		Meta: profile.Metadata{ModelName: "m", BatchSize: 1, Threads: 1, Reps: 2, CreatedAt: time.Unix(0, 0)},
		Rows: []profile.Row{row, row2},
	}
}

// encodeReplacing writes smallProfile with column col replaced by arr (or dropped when arr
// is nil, or added when col is new), and metadata changed by editMeta.
func encodeReplacing(t *testing.T, col string, arr arrow.Array, editMeta func(map[string]string)) []byte {
	t.Helper()
	p := smallProfile()
	base := schema(&p.Meta, false)
	rec := buildBatch(base, p.Rows)
	defer rec.Release()
	var fields []arrow.Field
	var cols []arrow.Array
	found := false
	for i, f := range base.Fields() {
		if f.Name == col {
			found = true
			if arr == nil {
				continue
			}
			fields = append(fields, arrow.Field{Name: col, Type: arr.DataType(), Nullable: true})
			cols = append(cols, arr)
			continue
		}
		fields = append(fields, f)
		cols = append(cols, rec.Column(i))
	}
	if !found && arr != nil {
		fields = append(fields, arrow.Field{Name: col, Type: arr.DataType(), Nullable: true})
		cols = append(cols, arr)
	}
	kv := p.Meta.Map()
	if editMeta != nil {
		editMeta(kv)
	}
	keys := sortedKeys(kv)
	vals := make([]string, len(keys))
	for i, k := range keys {
		vals[i] = kv[k]
	}
	md := arrow.NewMetadata(keys, vals)
	s := arrow.NewSchema(fields, &md)
	out := array.NewRecordBatch(s, cols, rec.NumRows())
	defer out.Release()
	var buf bytes.Buffer
	w, err := ipc.NewFileWriter(&buf, ipc.WithSchema(s))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(out); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestReadColumnTypes(t *testing.T) {
	mem := memory.NewGoAllocator()
	f64 := func(vs ...float64) arrow.Array {
		b := array.NewFloat64Builder(mem)
		b.AppendValues(vs, nil)
		return b.NewArray()
	}
	i64 := func(vs ...int64) arrow.Array {
		b := array.NewInt64Builder(mem)
		b.AppendValues(vs, nil)
		return b.NewArray()
	}
	u64 := func(vs ...uint64) arrow.Array {
		b := array.NewUint64Builder(mem)
		b.AppendValues(vs, nil)
		return b.NewArray()
	}
	f32 := func(vs ...float32) arrow.Array {
		b := array.NewFloat32Builder(mem)
		b.AppendValues(vs, nil)
		return b.NewArray()
	}
	str := func(vs ...string) arrow.Array {
		b := array.NewLargeStringBuilder(mem)
		b.AppendValues(vs, nil)
		return b.NewArray()
	}
	withNull := func() arrow.Array {
		b := array.NewInt64Builder(mem)
		b.AppendValues([]int64{8, 0}, []bool{true, false})
		return b.NewArray()
	}
	tests := []struct {
		name     string
		col      string
		arr      arrow.Array
		editMeta func(map[string]string)
		want     string // "" when the file is valid
	}{
		{"float sizes", ColSavedBytes, f64(8, 8), nil, `column "saved_bytes": has type float64, want an integer type`},
		{"integer names", ColStageName, i64(1, 1), nil, `column "stage_name": has type int64, want utf8`},
		{"string times", ColBwdTimeS, str("2", "2"), nil, `column "bwd_time_s": has type large_utf8, want float64`},
		{"integer times", ColFwdTimeS, i64(1, 1), nil, `column "fwd_time_s": has type int64, want float64`},
		{"float32 times", ColFwdTimeS, f32(1, 1), nil, ""},
		{"large_utf8 names", ColStageName, str("l", "l"), nil, ""},
		{"uint64 overflow", ColInBytes, u64(8, 1<<63), nil, `column "in_bytes", row 1: value does not fit in an int64`},
		{"null in a required column", ColOutBytes, withNull(), nil, `column "out_bytes", row 1: null`},
		{"missing column", ColParamBytes, nil, nil, `column "param_bytes": missing`},
		{"extra column", "comment", str("a", "b"), nil, ""},
		{"missing key", "", nil, func(kv map[string]string) { delete(kv, profile.KeyHost); delete(kv, profile.KeyDType) },
			`metadata key "dtype": missing from the schema metadata (missing keys: dtype, host)`},
		{"bad time", "", nil, func(kv map[string]string) { kv[profile.KeyCreatedAt] = "yesterday" }, `metadata key "created_at"`},
		{"bad threads", "", nil, func(kv map[string]string) { kv[profile.KeyThreads] = "many" }, `metadata key "threads": "many" is not an integer`},
		{"bad shape", "", nil, func(kv map[string]string) { kv[profile.KeyInputShape] = "32x3" }, `metadata key "input_shape"`},
		{"fractional shape", "", nil, func(kv map[string]string) { kv[profile.KeyInputShape] = "[1.5]" }, `dimension 0 is 1.5`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := encodeReplacing(t, tt.col, tt.arr, tt.editMeta)
			_, err := Read(data)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Read: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidProfile) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Read error %v, want ErrInvalidProfile mentioning %q", err, tt.want)
			}
		})
	}
}

func TestReadDuplicateColumn(t *testing.T) {
	p := smallProfile()
	s := schema(&p.Meta, false)
	rec := buildBatch(s, p.Rows)
	defer rec.Release()
	md := s.Metadata()
	fields := append(s.Fields(), s.Field(4))
	cols := append(rec.Columns(), rec.Column(4))
	dup := arrow.NewSchema(fields, &md)
	out := array.NewRecordBatch(dup, cols, rec.NumRows())
	defer out.Release()
	var buf bytes.Buffer
	w, err := ipc.NewFileWriter(&buf, ipc.WithSchema(dup))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(out); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = Read(buf.Bytes())
	if want := `column "fwd_time_s": appears twice`; !errors.Is(err, ErrInvalidProfile) || !strings.Contains(err.Error(), want) {
		t.Fatalf("Read error %v, want ErrInvalidProfile mentioning %q", err, want)
	}
}
