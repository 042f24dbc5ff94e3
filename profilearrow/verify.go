package profilearrow

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// arrow-go decodes a schema by allocating slices as long as the counts its flatbuffer
// declares and by recursing into child fields, before any check of ours can run: a corrupt
// count makes it allocate terabytes, a child that points back at its parent recurses
// forever, and neither can be recovered from. So Read verifies the schema's flatbuffer
// first, as a flatbuffers verifier would: every table, vector and string lies inside the
// buffer, nesting is bounded, and so is the number of fields. Record batches need no such
// pass: arrow-go indexes them without allocating by count, its bounds panics are recovered
// by Read, and their decoded buffers go through cappedAllocator.
//
// Layout references: Arrow format/Schema.fbs, File.fbs and Message.fbs; the flatbuffers
// binary format (tables start with an int32 offset back to their vtable; a vtable is
// uint16 size, uint16 table size, then one uint16 offset per field, 0 when absent).

// Limits of the schema verifier, far above any profile (13 columns, no nesting).
const (
	maxFieldDepth = 32
	maxFields     = 10000
)

var errFlatbuffer = errors.New("malformed flatbuffer")

// fbTable is a bounds-checked view of one flatbuffers table.
type fbTable struct {
	buf    []byte
	pos    int // start of the table
	vt     int // start of its vtable
	vtLen  int // vtable size in bytes
	tabLen int // inline table size in bytes
}

func u16(buf []byte, at int) (int, bool) {
	if at < 0 || at+2 > len(buf) {
		return 0, false
	}
	return int(binary.LittleEndian.Uint16(buf[at:])), true
}

func u32(buf []byte, at int) (int, bool) {
	if at < 0 || at+4 > len(buf) {
		return 0, false
	}
	return int(binary.LittleEndian.Uint32(buf[at:])), true
}

// tableAt checks the table starting at pos and its vtable.
func tableAt(buf []byte, pos int) (fbTable, error) {
	soff, ok := u32(buf, pos)
	if !ok {
		return fbTable{}, fmt.Errorf("%w: table at %d is outside the buffer", errFlatbuffer, pos)
	}
	t := fbTable{buf: buf, pos: pos, vt: pos - int(int32(uint32(soff)))}
	var ok1, ok2 bool
	t.vtLen, ok1 = u16(buf, t.vt)
	t.tabLen, ok2 = u16(buf, t.vt+2)
	if !ok1 || !ok2 || t.vtLen < 4 || t.vtLen%2 != 0 || t.vt+t.vtLen > len(buf) || t.tabLen < 4 || pos+t.tabLen > len(buf) {
		return fbTable{}, fmt.Errorf("%w: bad vtable for the table at %d", errFlatbuffer, pos)
	}
	return t, nil
}

// field returns the absolute position of field slot, or 0 when absent.
func (t fbTable) field(slot int) (int, error) {
	at := 4 + 2*slot
	if at+2 > t.vtLen {
		return 0, nil
	}
	off, _ := u16(t.buf, t.vt+at)
	if off == 0 {
		return 0, nil
	}
	if off >= t.tabLen {
		return 0, fmt.Errorf("%w: field %d of the table at %d lies outside it", errFlatbuffer, slot, t.pos)
	}
	return t.pos + off, nil
}

// ref follows the uoffset stored in field slot; 0 when the field is absent.
func (t fbTable) ref(slot int) (int, error) {
	at, err := t.field(slot)
	if at == 0 || err != nil {
		return 0, err
	}
	off, ok := u32(t.buf, at)
	target := at + off
	if !ok || off == 0 || target+4 > len(t.buf) {
		return 0, fmt.Errorf("%w: field %d of the table at %d points outside the buffer", errFlatbuffer, slot, t.pos)
	}
	return target, nil
}

// vector checks the vector in field slot, of n elements of elemSize bytes each, and
// returns the position of its first element and n (0, 0 when absent).
func (t fbTable) vector(slot, elemSize int) (start, n int, err error) {
	at, err := t.ref(slot)
	if at == 0 || err != nil {
		return 0, 0, err
	}
	n, _ = u32(t.buf, at)
	start = at + 4
	if n > (len(t.buf)-start)/elemSize {
		return 0, 0, fmt.Errorf("%w: vector of %d elements at %d does not fit in the buffer", errFlatbuffer, n, at)
	}
	return start, n, nil
}

// tables checks a vector of tables in field slot and returns them.
func (t fbTable) tables(slot int) ([]fbTable, error) {
	start, n, err := t.vector(slot, 4)
	if err != nil {
		return nil, err
	}
	out := make([]fbTable, 0, n) // n ≤ len(buf)/4, checked by vector
	for i := 0; i < n; i++ {
		at := start + 4*i
		off, _ := u32(t.buf, at)
		sub, err := tableAt(t.buf, at+off)
		if err != nil {
			return nil, err
		}
		out = append(out, sub)
	}
	return out, nil
}

// table checks the table in field slot; ok is false when absent.
func (t fbTable) table(slot int) (sub fbTable, ok bool, err error) {
	at, err := t.ref(slot)
	if at == 0 || err != nil {
		return fbTable{}, false, err
	}
	sub, err = tableAt(t.buf, at)
	return sub, err == nil, err
}

// verifyKeyValues checks a vector of KeyValue {key: string; value: string} in field slot.
func (t fbTable) verifyKeyValues(slot int) error {
	kvs, err := t.tables(slot)
	if err != nil {
		return err
	}
	for _, kv := range kvs {
		for s := 0; s < 2; s++ {
			if _, _, err := kv.vector(s, 1); err != nil {
				return err
			}
		}
	}
	return nil
}

// verifySchema checks a Schema {endianness; fields: [Field]; custom_metadata: [KeyValue];
// features: [long]}.
func verifySchema(s fbTable) error {
	fields, err := s.tables(1)
	if err != nil {
		return err
	}
	count := 0
	for _, f := range fields {
		if err := verifyField(f, 1, &count); err != nil {
			return err
		}
	}
	if err := s.verifyKeyValues(2); err != nil {
		return err
	}
	_, _, err = s.vector(3, 8)
	return err
}

// typeUnion is the Type union tag of Union (Schema.fbs).
const typeUnion = 14

// verifyField checks a Field {name: string; nullable; type_type; type; dictionary;
// children: [Field]; custom_metadata: [KeyValue]}.
func verifyField(f fbTable, depth int, count *int) error {
	*count++
	if depth > maxFieldDepth || *count > maxFields {
		return fmt.Errorf("%w: more than %d nested or %d fields", errFlatbuffer, maxFieldDepth, maxFields)
	}
	if _, _, err := f.vector(0, 1); err != nil {
		return err
	}
	typ, ok, err := f.table(3)
	if err != nil {
		return err
	}
	if at, err := f.field(2); err != nil {
		return err
	} else if ok && at != 0 && f.buf[at] == typeUnion {
		if _, _, err := typ.vector(1, 4); err != nil { // Union.typeIds: [int]
			return err
		}
	}
	if dict, ok, err := f.table(4); err != nil {
		return err
	} else if ok {
		if _, _, err := dict.table(1); err != nil { // DictionaryEncoding.indexType: Int
			return err
		}
	}
	children, err := f.tables(5)
	if err != nil {
		return err
	}
	for _, c := range children {
		if err := verifyField(c, depth+1, count); err != nil {
			return err
		}
	}
	return f.verifyKeyValues(6)
}

// verifyFileSchema checks the footer of an Arrow IPC file (Footer {version; schema: Schema;
// dictionaries: [Block]; recordBatches: [Block]; custom_metadata}) and its schema.
func verifyFileSchema(data []byte) error {
	end := len(data) - len(arrowMagic) - 4
	size, ok := u32(data, end)
	if !ok || size <= 0 || size > end-len(arrowMagic) {
		return fmt.Errorf("%w: footer length out of range", errFlatbuffer)
	}
	footer := data[end-size : end]
	root, ok := u32(footer, 0)
	if !ok {
		return fmt.Errorf("%w: empty footer", errFlatbuffer)
	}
	ft, err := tableAt(footer, root)
	if err != nil {
		return err
	}
	s, ok, err := ft.table(1)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: the footer has no schema", errFlatbuffer)
	}
	if err := verifySchema(s); err != nil {
		return err
	}
	for _, slot := range []int{2, 3} { // Block is a 24-byte struct
		if _, _, err := ft.vector(slot, 24); err != nil {
			return err
		}
	}
	return ft.verifyKeyValues(4)
}

// messageHeaderSchema is the MessageHeader union tag of Schema (Message.fbs).
const messageHeaderSchema = 1

// verifyStreamSchema checks the first message of an Arrow IPC stream (continuation marker,
// int32 length, Message {version; header_type; header; bodyLength; custom_metadata}),
// which must be a schema.
func verifyStreamSchema(data []byte) error {
	size, ok := u32(data, 4)
	if !ok || int(int32(uint32(size))) < 4 || size > len(data)-8 {
		return fmt.Errorf("%w: first message length out of range", errFlatbuffer)
	}
	msg := data[8 : 8+size]
	root, _ := u32(msg, 0)
	mt, err := tableAt(msg, root)
	if err != nil {
		return err
	}
	at, err := mt.field(1)
	if err != nil {
		return err
	}
	if at == 0 || msg[at] != messageHeaderSchema {
		return fmt.Errorf("%w: the stream does not start with a schema", errFlatbuffer)
	}
	s, ok, err := mt.table(2)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: the schema message has no schema", errFlatbuffer)
	}
	if err := verifySchema(s); err != nil {
		return err
	}
	return mt.verifyKeyValues(4)
}
