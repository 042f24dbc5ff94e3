package profilearrow

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/profile"
)

// arrowMagic opens and closes an Arrow IPC file (the stream format has no magic).
var arrowMagic = []byte("ARROW1")

// streamEOS is the end-of-stream marker every complete Arrow IPC stream ends with.
var streamEOS = []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}

// Want is what a profile file is, as messages about a path that holds none say.
const Want = "a profile file (" + profile.Format + " Arrow)"

// ReadFile reads and validates the profile file at path (chainplan.ReadInput: a path that
// is no regular file with content fails with a *chainplan.InputError).
func ReadFile(path string) (*Profile, error) {
	data, err := chainplan.ReadInput(path, Want)
	if err != nil {
		return nil, err
	}
	p, err := Read(data)
	if err != nil {
		return nil, fmt.Errorf("read profile %s: %w", path, err)
	}
	return p, nil
}

// Read decodes and validates a profile held in memory: an Arrow IPC file (magic "ARROW1",
// what feather.write_feather writes) or an Arrow IPC stream. The returned error is an *Error
// (errors.Is ErrInvalidProfile) naming the column, key and row of the first problem, or
// wraps chainplan.ErrSchemaVersion for a file of another format version.
func Read(data []byte) (p *Profile, err error) {
	// arrow-go panics on some malformed inputs; no input may crash the caller.
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, fileError("corrupt Arrow data", fmt.Errorf("%v", r))
		}
	}()
	if len(data) == 0 {
		return nil, fileError("the file is empty", nil)
	}
	alloc := &cappedAllocator{mem: memory.NewGoAllocator(), limit: decodeLimit(len(data))}
	opts := []ipc.Option{
		ipc.WithAllocator(alloc),
		ipc.WithMetadataSizeLimit(int64(len(data))),
		ipc.WithBodySizeLimit(int64(len(data))),
	}
	var d decoder
	if bytes.HasPrefix(data, arrowMagic) {
		err = d.readFile(data, opts)
	} else {
		err = d.readStream(data, opts)
	}
	if err != nil {
		return nil, err
	}
	return d.profile()
}

// decoder accumulates the rows of a file's record batches.
type decoder struct {
	meta profile.Metadata
	idx  map[string]int // column name → field index
	rows []profile.Row
}

func (d *decoder) readFile(data []byte, opts []ipc.Option) error {
	if len(data) < 2*len(arrowMagic)+4 || !bytes.HasSuffix(data, arrowMagic) {
		return fileError("truncated Arrow IPC file (no closing ARROW1 magic)", nil)
	}
	if err := verifyFileSchema(data); err != nil {
		return fileError("corrupt Arrow IPC file", err)
	}
	r, err := ipc.NewFileReader(bytes.NewReader(data), opts...)
	if err != nil {
		return fileError("corrupt Arrow IPC file", err)
	}
	defer r.Close()
	if err := d.setSchema(r.Schema()); err != nil {
		return err
	}
	for i := 0; i < r.NumRecords(); i++ {
		rec, err := r.RecordBatchAt(i)
		if err != nil {
			return fileError(fmt.Sprintf("corrupt record batch %d", i), err)
		}
		err = d.addBatch(rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

func (d *decoder) readStream(data []byte, opts []ipc.Option) error {
	if len(data) < 8 || binary.LittleEndian.Uint32(data) != 0xffffffff {
		return fileError("not an Arrow IPC file or stream (no ARROW1 magic, no stream continuation marker)", nil)
	}
	if !bytes.HasSuffix(data, streamEOS) {
		return fileError("truncated Arrow IPC stream (no end-of-stream marker)", nil)
	}
	if err := verifyStreamSchema(data); err != nil {
		return fileError("corrupt Arrow IPC stream", err)
	}
	// ipc.NewReader does not pass the size limits on to its message reader; build it here.
	r, err := ipc.NewReaderFromMessageReader(ipc.NewMessageReader(bytes.NewReader(data), opts...), opts...)
	if err != nil {
		return fileError("corrupt Arrow IPC stream", err)
	}
	defer r.Release()
	if err := d.setSchema(r.Schema()); err != nil {
		return err
	}
	for i := 0; r.Next(); i++ {
		if err := d.addBatch(r.RecordBatch()); err != nil {
			return err
		}
	}
	if err := r.Err(); err != nil {
		return fileError("corrupt Arrow IPC stream", err)
	}
	return nil
}

// setSchema checks the schema metadata and the presence and types of the columns.
func (d *decoder) setSchema(s *arrow.Schema) error {
	md := s.Metadata()
	kv := make(map[string]string, md.Len())
	for i, k := range md.Keys() {
		kv[k] = md.Values()[i]
	}
	meta, err := metadata(kv)
	if err != nil {
		return err
	}
	d.meta = meta
	d.idx = make(map[string]int, len(s.Fields()))
	for i, f := range s.Fields() {
		if _, dup := d.idx[f.Name]; dup {
			return columnError(f.Name, "appears twice")
		}
		d.idx[f.Name] = i
	}
	for _, c := range columns {
		i, ok := d.idx[c.name]
		if !ok {
			return columnError(c.name, fmt.Sprintf("missing (a %s column is required)", c.kind))
		}
		if !kindAccepts(c.kind, s.Field(i).Type) {
			return columnError(c.name, fmt.Sprintf("has type %s, want %s", s.Field(i).Type, c.kind))
		}
	}
	for _, c := range optionalColumns {
		if i, ok := d.idx[c.name]; ok && !kindAccepts(c.kind, s.Field(i).Type) {
			return columnError(c.name, fmt.Sprintf("has type %s, want %s", s.Field(i).Type, c.kind))
		}
	}
	return d.checkParallelSchema(s)
}

// kindAccepts reports whether an Arrow type can hold a column of kind k.
func kindAccepts(k colKind, t arrow.DataType) bool {
	switch k {
	case kindInt:
		return arrow.IsInteger(t.ID())
	case kindFloat:
		return t.ID() == arrow.FLOAT64 || t.ID() == arrow.FLOAT32
	case kindBool:
		return t.ID() == arrow.BOOL
	default:
		if dt, ok := t.(*arrow.DictionaryType); ok {
			t = dt.ValueType
		}
		switch t.ID() {
		case arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW:
			return true
		}
		return false
	}
}

// addBatch validates the Arrow structure of one record batch and appends its rows.
func (d *decoder) addBatch(rec arrow.RecordBatch) error {
	base := len(d.rows)
	n := int(rec.NumRows())
	cols := make(map[string]arrow.Array, len(columns))
	for _, c := range columns {
		arr := rec.Column(d.idx[c.name])
		if err := array.ValidateFull(arr); err != nil {
			return &Error{Column: c.name, Row: -1, Msg: "corrupt Arrow array", Err: err}
		}
		if arr.Len() != n {
			return columnError(c.name, fmt.Sprintf("has %d values in a batch of %d rows", arr.Len(), n))
		}
		if !c.nullable && arr.NullN() > 0 {
			for i := 0; i < n; i++ {
				if arr.IsNull(i) {
					return &Error{Column: c.name, Row: base + i, Msg: "null (this column may not hold nulls)"}
				}
			}
		}
		cols[c.name] = arr
	}
	ints := make(map[string]func(int) (int64, bool), 6)
	for _, c := range columns {
		if c.kind == kindInt {
			ints[c.name] = intGetter(cols[c.name])
		}
	}
	getInt := func(col string, i int) (int64, error) {
		v, ok := ints[col](i)
		if !ok {
			return 0, &Error{Column: col, Row: base + i, Msg: "value does not fit in an int64"}
		}
		return v, nil
	}
	getNull := func(col string, i int) (profile.NullInt64, error) {
		if cols[col].IsNull(i) {
			return profile.NullInt64{}, nil
		}
		v, err := getInt(col, i)
		return profile.NullInt64{Int64: v, Valid: err == nil}, err
	}
	exact, err := newExactReader(d, rec, n)
	if err != nil {
		return err
	}
	parallel, err := d.parallelReader(rec, base, n)
	if err != nil {
		return err
	}
	fwd, bwd := floatGetter(cols[ColFwdTimeS]), floatGetter(cols[ColBwdTimeS])
	name, kind := cols[ColStageName], cols[ColStageKind]
	for i := 0; i < n; i++ {
		var r profile.Row
		var err error
		var v int64
		if v, err = getInt(ColStageIndex, i); err != nil {
			return err
		}
		if v < 1 || v > math.MaxInt32 {
			return &Error{Column: ColStageIndex, Row: base + i, Msg: fmt.Sprintf("%d is out of range (stages are numbered from 1)", v)}
		}
		r.StageIndex = int(v)
		if v, err = getInt(ColRep, i); err != nil {
			return err
		}
		if v < 0 || v > math.MaxInt32 {
			return &Error{Column: ColRep, Row: base + i, Msg: fmt.Sprintf("%d is out of range (repetitions are numbered from 0)", v)}
		}
		r.Rep = int(v)
		r.StageName, r.StageKind = name.ValueStr(i), kind.ValueStr(i)
		r.FwdTimeS, r.BwdTimeS = fwd(i), bwd(i)
		if r.InBytes, err = getInt(ColInBytes, i); err != nil {
			return err
		}
		if r.OutBytes, err = getInt(ColOutBytes, i); err != nil {
			return err
		}
		if r.ParamBytes, err = getInt(ColParamBytes, i); err != nil {
			return err
		}
		if r.SavedBytes, err = getNull(ColSavedBytes, i); err != nil {
			return err
		}
		if r.FwdTmpBytes, err = getNull(ColFwdTmpBytes, i); err != nil {
			return err
		}
		if r.BwdTmpBytes, err = getNull(ColBwdTmpBytes, i); err != nil {
			return err
		}
		if err := exact.read(&r, i, base+i); err != nil {
			return err
		}
		if err := checkRow(&r, base+i); err != nil {
			return err
		}
		if err := checkExact(&r, base+i); err != nil {
			return err
		}
		if err := parallel(i, &r); err != nil {
			return err
		}
		d.rows = append(d.rows, r)
	}
	return nil
}

// profile checks the rows as a whole and returns the profile.
func (d *decoder) profile() (*Profile, error) {
	towers, err := d.meta.Towers()
	if err != nil {
		return nil, err
	}
	if err := checkStructure(d.rows, towers); err != nil {
		return nil, err
	}
	if err := checkParallelStructure(d.rows); err != nil {
		return nil, err
	}
	return &Profile{Meta: d.meta, Rows: d.rows}, nil
}

// intGetter returns a function reading row i of an integer array as an int64, false when
// an unsigned value does not fit.
func intGetter(arr arrow.Array) func(int) (int64, bool) {
	switch a := arr.(type) {
	case *array.Int64:
		return func(i int) (int64, bool) { return a.Value(i), true }
	case *array.Int32:
		return func(i int) (int64, bool) { return int64(a.Value(i)), true }
	case *array.Int16:
		return func(i int) (int64, bool) { return int64(a.Value(i)), true }
	case *array.Int8:
		return func(i int) (int64, bool) { return int64(a.Value(i)), true }
	case *array.Uint64:
		return func(i int) (int64, bool) { v := a.Value(i); return int64(v), v <= math.MaxInt64 }
	case *array.Uint32:
		return func(i int) (int64, bool) { return int64(a.Value(i)), true }
	case *array.Uint16:
		return func(i int) (int64, bool) { return int64(a.Value(i)), true }
	case *array.Uint8:
		return func(i int) (int64, bool) { return int64(a.Value(i)), true }
	}
	panic(fmt.Sprintf("profilearrow: intGetter on %s", arr.DataType())) // setSchema checked the type
}

// floatGetter returns a function reading row i of a float32 or float64 array.
func floatGetter(arr arrow.Array) func(int) float64 {
	switch a := arr.(type) {
	case *array.Float64:
		return a.Value
	case *array.Float32:
		return func(i int) float64 { return float64(a.Value(i)) }
	}
	panic(fmt.Sprintf("profilearrow: floatGetter on %s", arr.DataType())) // setSchema checked the type
}
