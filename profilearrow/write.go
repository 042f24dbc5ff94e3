package profilearrow

import (
	"fmt"
	"io"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/chainplan/chainplan/profile"
)

// Compression codecs for WriteOptions.Compression.
const (
	CompressionNone = ""
	CompressionLZ4  = "lz4" // LZ4 frame, feather.write_feather's default
	CompressionZSTD = "zstd"
)

// WriteOptions controls how Write encodes a profile. The zero value writes one
// uncompressed record batch in the IPC file format.
type WriteOptions struct {
	Compression string // CompressionNone, CompressionLZ4 or CompressionZSTD
	Stream      bool   // write the IPC stream format instead of the file format
	BatchRows   int    // rows per record batch; 0 writes all rows in one batch
}

// schema returns the Arrow schema of version 1 with the given metadata: the required
// columns, the optional columns of the exact memory model, and those of the parallel
// fields when withParallel is set.
func schema(meta *profile.Metadata, withParallel bool) *arrow.Schema {
	cols := append(slices.Clip(columns), optionalColumns...)
	if withParallel {
		cols = append(cols, parallelColumns...)
	}
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		var t arrow.DataType
		switch c.kind {
		case kindInt:
			t = arrow.PrimitiveTypes.Int64
		case kindFloat:
			t = arrow.PrimitiveTypes.Float64
		case kindBool:
			t = arrow.FixedWidthTypes.Boolean
		default:
			t = arrow.BinaryTypes.String
		}
		fields[i] = arrow.Field{Name: c.name, Type: t, Nullable: c.nullable}
	}
	kv := meta.Map()
	keys := sortedKeys(kv)
	vals := make([]string, len(keys))
	for i, k := range keys {
		vals[i] = kv[k]
	}
	md := arrow.NewMetadata(keys, vals)
	return arrow.NewSchema(fields, &md)
}

// Write writes p as a profile file with the canonical types (int64, float64, utf8) of
// version 1. It does not validate p: Read does, so that tests can write bad files too.
func Write(w io.Writer, p *Profile, opts WriteOptions) error {
	s := schema(&p.Meta, hasParallel(p.Rows))
	wopts := []ipc.Option{ipc.WithSchema(s)}
	switch opts.Compression {
	case CompressionNone:
	case CompressionLZ4:
		wopts = append(wopts, ipc.WithLZ4())
	case CompressionZSTD:
		wopts = append(wopts, ipc.WithZstd())
	default:
		return fmt.Errorf("write profile: unknown compression %q (want %q, %q or none)", opts.Compression,
			CompressionLZ4, CompressionZSTD)
	}
	var iw interface {
		Write(arrow.RecordBatch) error
		Close() error
	}
	if opts.Stream {
		iw = ipc.NewWriter(w, wopts...)
	} else {
		fw, err := ipc.NewFileWriter(w, wopts...)
		if err != nil {
			return fmt.Errorf("write profile: %w", err)
		}
		iw = fw
	}
	step := opts.BatchRows
	if step <= 0 {
		step = max(len(p.Rows), 1)
	}
	for lo := 0; ; lo += step {
		hi := min(lo+step, len(p.Rows))
		rec := buildBatch(s, p.Rows[lo:hi])
		err := iw.Write(rec)
		rec.Release()
		if err != nil {
			return fmt.Errorf("write profile: %w", err)
		}
		if hi >= len(p.Rows) {
			break
		}
	}
	if err := iw.Close(); err != nil {
		return fmt.Errorf("write profile: %w", err)
	}
	return nil
}

// buildBatch builds one record batch of rows.
func buildBatch(s *arrow.Schema, rows []profile.Row) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.NewGoAllocator(), s)
	defer b.Release()
	b.Reserve(len(rows))
	for i, c := range columns {
		fb := b.Field(i)
		for j := range rows {
			r := &rows[j]
			switch c.name {
			case ColStageIndex:
				fb.(*array.Int64Builder).Append(int64(r.StageIndex))
			case ColStageName:
				fb.(*array.StringBuilder).Append(r.StageName)
			case ColStageKind:
				fb.(*array.StringBuilder).Append(r.StageKind)
			case ColRep:
				fb.(*array.Int64Builder).Append(int64(r.Rep))
			case ColFwdTimeS:
				fb.(*array.Float64Builder).Append(r.FwdTimeS)
			case ColBwdTimeS:
				fb.(*array.Float64Builder).Append(r.BwdTimeS)
			case ColInBytes:
				fb.(*array.Int64Builder).Append(r.InBytes)
			case ColOutBytes:
				fb.(*array.Int64Builder).Append(r.OutBytes)
			case ColSavedBytes:
				appendNull(fb.(*array.Int64Builder), r.SavedBytes)
			case ColFwdTmpBytes:
				appendNull(fb.(*array.Int64Builder), r.FwdTmpBytes)
			case ColBwdTmpBytes:
				appendNull(fb.(*array.Int64Builder), r.BwdTmpBytes)
			case ColParamBytes:
				fb.(*array.Int64Builder).Append(r.ParamBytes)
			default:
				panic("profilearrow: buildBatch: unhandled column " + c.name)
			}
		}
	}
	for i, c := range optionalColumns {
		fb := b.Field(len(columns) + i)
		for j := range rows {
			appendExact(fb, c.name, &rows[j])
		}
	}
	for i := len(columns) + len(optionalColumns); i < len(s.Fields()); i++ {
		appendParallel(b.Field(i), s.Field(i).Name, rows)
	}
	return b.NewRecordBatch()
}

func appendNull(b *array.Int64Builder, v profile.NullInt64) {
	if v.Valid {
		b.Append(v.Int64)
	} else {
		b.AppendNull()
	}
}
