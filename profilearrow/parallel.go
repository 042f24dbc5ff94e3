package profilearrow

import (
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/chainplan/chainplan/profile"
)

// Optional columns: the parallel fields (profile.Parallel; docs/formats.md, "Parallel
// fields"). Files without them load as before; every one may hold nulls.
const (
	ColInShape        = "in_shape"         // the stage input's shape, a JSON array, batch first
	ColOutShape       = "out_shape"        // the stage output's shape
	ColWeightCount    = "weight_count"     // parameter elements that are not biases
	ColBiasCount      = "bias_count"       // bias elements
	ColModulesJSON    = "modules_json"     // the stage's convolutions and linear layers, JSON
	ColBatchTimesJSON = "batch_times_json" // the row's times at other batch sizes, JSON
)

// parallelColumns lists the optional columns, in the order Write writes them.
var parallelColumns = []column{
	{ColInShape, kindString, true},
	{ColOutShape, kindString, true},
	{ColWeightCount, kindInt, true},
	{ColBiasCount, kindInt, true},
	{ColModulesJSON, kindString, true},
	{ColBatchTimesJSON, kindString, true},
}

// checkParallelSchema checks the types of the optional columns the file has.
func (d *decoder) checkParallelSchema(s *arrow.Schema) error {
	for _, c := range parallelColumns {
		if i, ok := d.idx[c.name]; ok && !kindAccepts(c.kind, s.Field(i).Type) {
			return columnError(c.name, fmt.Sprintf("has type %s, want %s", s.Field(i).Type, c.kind))
		}
	}
	return nil
}

// parallelReader returns a function that sets row i's parallel fields from the batch's
// optional columns, in canonical form; errors name the column and row.
func (d *decoder) parallelReader(rec arrow.RecordBatch, base, n int) (func(i int, r *profile.Row) error, error) {
	strs := map[string]arrow.Array{}
	ints := map[string]func(int) (int64, bool){}
	for _, c := range parallelColumns {
		j, ok := d.idx[c.name]
		if !ok {
			continue
		}
		arr := rec.Column(j)
		if err := array.ValidateFull(arr); err != nil {
			return nil, &Error{Column: c.name, Row: -1, Msg: "corrupt Arrow array", Err: err}
		}
		if arr.Len() != n {
			return nil, columnError(c.name, fmt.Sprintf("has %d values in a batch of %d rows", arr.Len(), n))
		}
		if c.kind == kindInt {
			get := intGetter(arr)
			ints[c.name] = func(i int) (int64, bool) {
				if arr.IsNull(i) {
					return 0, false
				}
				v, ok := get(i)
				if !ok {
					return -1, true // refused below as negative
				}
				return v, true
			}
		} else {
			strs[c.name] = arr
		}
	}
	if len(strs)+len(ints) == 0 {
		return func(int, *profile.Row) error { return nil }, nil
	}
	str := func(col string, i int) string {
		arr, ok := strs[col]
		if !ok || arr.IsNull(i) {
			return ""
		}
		return arr.ValueStr(i)
	}
	count := func(col string, i int) profile.NullInt64 {
		get, ok := ints[col]
		if !ok {
			return profile.NullInt64{}
		}
		v, valid := get(i)
		return profile.NullInt64{Int64: v, Valid: valid}
	}
	return func(i int, r *profile.Row) error {
		p := profile.Parallel{
			InShape: str(ColInShape, i), OutShape: str(ColOutShape, i),
			WeightCount: count(ColWeightCount, i), BiasCount: count(ColBiasCount, i),
			Modules: str(ColModulesJSON, i), BatchTimes: str(ColBatchTimesJSON, i),
		}
		canon, err := p.Canonical()
		if fe, ok := errors.AsType[*profile.FieldError](err); ok {
			return &Error{Column: fe.Field, Row: base + i, Stage: r.StageIndex, Rep: r.Rep, Msg: fe.Msg}
		} else if err != nil {
			return err
		}
		r.Parallel = canon
		return nil
	}, nil
}

// checkParallelStructure checks that every row of a stage records the same shapes,
// counts and modules (the batch times are measurements and may differ).
func checkParallelStructure(rows []profile.Row) error {
	first := map[int]int{} // stage index → its first row
	for i := range rows {
		r := &rows[i]
		j, seen := first[r.StageIndex]
		if !seen {
			first[r.StageIndex] = i
			continue
		}
		if !r.Parallel.SameStructure(rows[j].Parallel) {
			return &Error{Column: differingColumn(r.Parallel, rows[j].Parallel), Row: i, Stage: r.StageIndex, Rep: r.Rep,
				Msg: fmt.Sprintf("differs from row %d of the same stage (shapes, counts and modules are the same on every row of a stage)", j)}
		}
	}
	return nil
}

func differingColumn(p, q profile.Parallel) string {
	switch {
	case p.InShape != q.InShape:
		return ColInShape
	case p.OutShape != q.OutShape:
		return ColOutShape
	case p.WeightCount != q.WeightCount:
		return ColWeightCount
	case p.BiasCount != q.BiasCount:
		return ColBiasCount
	}
	return ColModulesJSON
}

// hasParallel reports whether any row records a parallel field: Write adds the optional
// columns only then, so that a profile without them is written as before.
func hasParallel(rows []profile.Row) bool {
	for i := range rows {
		if rows[i].Parallel.Recorded() {
			return true
		}
	}
	return false
}

// appendParallel appends rows' value of the optional column named col to fb.
func appendParallel(fb array.Builder, col string, rows []profile.Row) {
	for j := range rows {
		p := &rows[j].Parallel
		switch col {
		case ColInShape:
			appendString(fb.(*array.StringBuilder), p.InShape)
		case ColOutShape:
			appendString(fb.(*array.StringBuilder), p.OutShape)
		case ColWeightCount:
			appendNull(fb.(*array.Int64Builder), p.WeightCount)
		case ColBiasCount:
			appendNull(fb.(*array.Int64Builder), p.BiasCount)
		case ColModulesJSON:
			appendString(fb.(*array.StringBuilder), p.Modules)
		case ColBatchTimesJSON:
			appendString(fb.(*array.StringBuilder), p.BatchTimes)
		default:
			panic("profilearrow: appendParallel: unhandled column " + col)
		}
	}
}

// appendString appends s, or a null for "".
func appendString(b *array.StringBuilder, s string) {
	if s == "" {
		b.AppendNull()
	} else {
		b.Append(s)
	}
}
