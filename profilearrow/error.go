package profilearrow

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidProfile reports a profile file that cannot be read or breaks the format: not
// Arrow, truncated, corrupt, missing columns or keys, wrong types, bad values. Callers test
// for it with errors.Is; the *Error that carries it names the column, key and row.
var ErrInvalidProfile = errors.New("chainplan: invalid profile")

// Error describes the first problem found in a profile file.
type Error struct {
	Column string // the column at fault, "" when the problem is not about one column
	Key    string // the schema-metadata key at fault, "" when not about one key
	Row    int    // the 0-based row at fault, over all record batches; -1 when not about one row
	Stage  int    // the row's stage_index, 0 when unknown
	Rep    int    // the row's rep, when Stage is set
	Msg    string // what is wrong
	Err    error  // the underlying cause (an Arrow decoding error), if any
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("invalid profile")
	if e.Key != "" {
		fmt.Fprintf(&b, ": metadata key %q", e.Key)
	}
	if e.Column != "" {
		fmt.Fprintf(&b, ": column %q", e.Column)
	}
	if e.Row >= 0 {
		fmt.Fprintf(&b, ", row %d", e.Row)
		if e.Stage != 0 {
			fmt.Fprintf(&b, " (stage %d, rep %d)", e.Stage, e.Rep)
		}
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}

// Unwrap makes errors.Is(err, ErrInvalidProfile) true, and exposes the cause.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrInvalidProfile}
	}
	return []error{ErrInvalidProfile, e.Err}
}

// fileError reports a problem with the whole file.
func fileError(msg string, cause error) *Error {
	return &Error{Row: -1, Msg: msg, Err: cause}
}

// columnError reports a problem with a whole column.
func columnError(col, msg string) *Error {
	return &Error{Column: col, Row: -1, Msg: msg}
}
