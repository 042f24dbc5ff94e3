package pipeplan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
)

// reader reads the fields of one JSON object at path (for messages).
type reader struct{ path string }

func (r reader) at(field string) string {
	if r.path == "" {
		return field
	}
	return r.path + "." + field
}

func (r reader) fail(field, format string, args ...any) error {
	return &PlanError{Field: r.at(field), Msg: fmt.Sprintf(format, args...)}
}

// known refuses unknown and missing fields.
func (r reader) known(obj map[string]json.RawMessage, required, optional []string) error {
	names := make([]string, 0, len(obj))
	for name := range obj {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if !slices.Contains(required, name) && !slices.Contains(optional, name) {
			return r.fail(name, "unknown field")
		}
	}
	for _, name := range required {
		if _, ok := obj[name]; !ok {
			return r.fail(name, "missing")
		}
	}
	return nil
}

func isNull(v json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(v), []byte("null")) }

func (r reader) str(obj map[string]json.RawMessage, field string) (string, error) {
	var s string
	if v := obj[field]; isNull(v) || json.Unmarshal(v, &s) != nil {
		return "", r.fail(field, "want a string (got %s)", short(obj[field]))
	}
	return s, nil
}

func (r reader) boolean(obj map[string]json.RawMessage, field string, out *bool) error {
	if v := obj[field]; isNull(v) || json.Unmarshal(v, out) != nil {
		return r.fail(field, "want true or false (got %s)", short(obj[field]))
	}
	return nil
}

// number reads a finite number ≥ 0 (> 0 when positive is set).
func (r reader) number(obj map[string]json.RawMessage, field string, positive bool) (float64, error) {
	var f float64
	if v := obj[field]; isNull(v) || json.Unmarshal(v, &f) != nil {
		return 0, r.fail(field, "want a number (got %s)", short(obj[field]))
	}
	if f < 0 || (positive && f == 0) {
		return 0, r.fail(field, "want a %s number (got %s)", map[bool]string{true: "positive", false: "non-negative"}[positive], short(obj[field]))
	}
	return f, nil
}

// whole reads a whole number in [lo, hi].
func (r reader) whole(obj map[string]json.RawMessage, field string, lo, hi float64) (float64, error) {
	var f float64
	if v := obj[field]; isNull(v) || json.Unmarshal(v, &f) != nil || f != math.Trunc(f) {
		return 0, r.fail(field, "want a whole number (got %s)", short(obj[field]))
	}
	if f < lo || f > hi {
		return 0, r.fail(field, "want a whole number in [%.0f, %.0f] (got %s)", lo, hi, short(obj[field]))
	}
	return f, nil
}

func (r reader) integer(obj map[string]json.RawMessage, field string, lo, hi int) (int, error) {
	f, err := r.whole(obj, field, float64(lo), float64(hi))
	return int(f), err
}

// bytes reads a byte count: a whole number in [0, 2^62].
func (r reader) bytes(obj map[string]json.RawMessage, field string) (int64, error) {
	f, err := r.whole(obj, field, 0, 1<<62)
	return int64(f), err
}

// objects reads an array of JSON objects.
func (r reader) objects(obj map[string]json.RawMessage, field string) ([]map[string]json.RawMessage, error) {
	var items []map[string]json.RawMessage
	if v := obj[field]; isNull(v) || json.Unmarshal(v, &items) != nil {
		return nil, r.fail(field, "want an array of objects (got %s)", short(obj[field]))
	}
	for i, it := range items {
		if it == nil {
			return nil, r.fail(fmt.Sprintf("%s[%d]", field, i), "want an object (got null)")
		}
	}
	return items, nil
}

// short quotes a raw value for a message, cut at 40 characters.
func short(v json.RawMessage) string {
	s := strings.TrimSpace(string(v))
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
