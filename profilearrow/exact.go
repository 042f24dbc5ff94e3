package profilearrow

import (
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/chainplan/chainplan/profile"
)

// The optional columns of the exact memory model (chainplan.chain/v2, docs/formats.md): a
// file without them did not measure it, and its chain is read conservatively. Readers of
// version 1 ignore them.
const (
	ColSavesInput        = "saves_input"         // bool: the stage's backward needs its input
	ColSavesOutput       = "saves_output"        // bool: the stage's backward needs its output
	ColRecomputeTimeS    = "recompute_time_s"    // u_R, the recomputation before the backward
	ColRecomputeTmpBytes = "recompute_tmp_bytes" // o_R, its temporary peak above what it leaves
	ColOptionsJSON       = "options_json"        // the stage's operation-level options, JSON
	ColReplayBytes       = "replay_bytes"        // the stage's random-number state, 0/null: none
)

// optionalColumns are read when present, each nullable; Write writes them all.
var optionalColumns = []column{
	{ColSavesInput, kindBool, true},
	{ColSavesOutput, kindBool, true},
	{ColRecomputeTimeS, kindFloat, true},
	{ColRecomputeTmpBytes, kindInt, true},
	{ColOptionsJSON, kindString, true},
	{ColReplayBytes, kindInt, true},
}

// exactReader reads the optional columns of one record batch.
type exactReader struct {
	in, out arrow.Array // *array.Boolean, or nil when absent
	rt      arrow.Array
	rtmp    arrow.Array
	opts    arrow.Array
	replay  arrow.Array
}

func newExactReader(d *decoder, rec arrow.RecordBatch, n int) (*exactReader, error) {
	e := &exactReader{}
	for _, c := range optionalColumns {
		i, ok := d.idx[c.name]
		if !ok {
			continue
		}
		arr := rec.Column(i)
		if err := array.ValidateFull(arr); err != nil {
			return nil, &Error{Column: c.name, Row: -1, Msg: "corrupt Arrow array", Err: err}
		}
		if arr.Len() != n {
			return nil, columnError(c.name, fmt.Sprintf("has %d values in a batch of %d rows", arr.Len(), n))
		}
		switch c.name {
		case ColSavesInput:
			e.in = arr
		case ColSavesOutput:
			e.out = arr
		case ColRecomputeTimeS:
			e.rt = arr
		case ColRecomputeTmpBytes:
			e.rtmp = arr
		case ColOptionsJSON:
			e.opts = arr
		case ColReplayBytes:
			e.replay = arr
		}
	}
	return e, nil
}

// read fills r.Exact from row i of the batch; row is its index in the file.
func (e *exactReader) read(r *profile.Row, i, row int) error {
	boolAt := func(a arrow.Array) profile.NullBool {
		if a == nil || a.IsNull(i) {
			return profile.NullBool{}
		}
		return profile.NullBool{Bool: a.(*array.Boolean).Value(i), Valid: true}
	}
	r.SavesInput, r.SavesOutput = boolAt(e.in), boolAt(e.out)
	if e.rt != nil && !e.rt.IsNull(i) {
		r.RecomputeTimeS = profile.NullFloat64{Float64: floatGetter(e.rt)(i), Valid: true}
	}
	if e.rtmp != nil && !e.rtmp.IsNull(i) {
		v, ok := intGetter(e.rtmp)(i)
		if !ok {
			return &Error{Column: ColRecomputeTmpBytes, Row: row, Msg: "value does not fit in an int64"}
		}
		r.RecomputeTmpBytes = profile.NullInt64{Int64: v, Valid: true}
	}
	if e.opts != nil && !e.opts.IsNull(i) {
		r.OptionsJSON = e.opts.ValueStr(i)
	}
	if e.replay != nil && !e.replay.IsNull(i) {
		v, ok := intGetter(e.replay)(i)
		if !ok {
			return &Error{Column: ColReplayBytes, Row: row, Msg: "value does not fit in an int64"}
		}
		r.ReplayBytes = profile.NullInt64{Int64: v, Valid: true}
	}
	return nil
}

// checkExact checks the exact model of one row on its own.
func checkExact(r *profile.Row, row int) error {
	bad := func(col, msg string) error {
		return &Error{Column: col, Row: row, Stage: r.StageIndex, Rep: r.Rep, Msg: msg}
	}
	if v := r.RecomputeTimeS; v.Valid && (math.IsNaN(v.Float64) || math.IsInf(v.Float64, 0) || v.Float64 < 0) {
		return bad(ColRecomputeTimeS, fmt.Sprintf("%g is not a time", v.Float64))
	}
	if v := r.RecomputeTmpBytes; v.Valid && v.Int64 < 0 {
		return bad(ColRecomputeTmpBytes, fmt.Sprintf("negative size %d bytes", v.Int64))
	}
	if v := r.ReplayBytes; v.Valid && v.Int64 < 0 {
		return bad(ColReplayBytes, fmt.Sprintf("negative size %d bytes", v.Int64))
	}
	if _, err := profile.ParseOptions(r.StageIndex, r.OptionsJSON); err != nil {
		return bad(ColOptionsJSON, err.Error())
	}
	return nil
}

// appendExact appends the optional column c of row r to its builder.
func appendExact(fb array.Builder, c string, r *profile.Row) {
	switch c {
	case ColSavesInput, ColSavesOutput:
		v := r.SavesInput
		if c == ColSavesOutput {
			v = r.SavesOutput
		}
		if v.Valid {
			fb.(*array.BooleanBuilder).Append(v.Bool)
		} else {
			fb.AppendNull()
		}
	case ColRecomputeTimeS:
		if r.RecomputeTimeS.Valid {
			fb.(*array.Float64Builder).Append(r.RecomputeTimeS.Float64)
		} else {
			fb.AppendNull()
		}
	case ColRecomputeTmpBytes:
		appendNull(fb.(*array.Int64Builder), r.RecomputeTmpBytes)
	case ColReplayBytes:
		appendNull(fb.(*array.Int64Builder), r.ReplayBytes)
	case ColOptionsJSON:
		if r.OptionsJSON != "" {
			fb.(*array.StringBuilder).Append(r.OptionsJSON)
		} else {
			fb.AppendNull()
		}
	default:
		panic("profilearrow: appendExact: unhandled column " + c)
	}
}
