package chainplan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
)

// What every JSON document reader of this package shares: its syntax errors told with a
// line, and the checks of a raw number or a time. The chain, plan and multichain readers
// and the format tag reader all stand on these, so they sit below every one of them.

// checkTime returns what is wrong with a time (NaN, infinite or negative), or "".
func checkTime(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN is not a time"
	case math.IsInf(v, 0):
		return "infinite time"
	case v < 0:
		return fmt.Sprintf("negative time %g", v)
	}
	return ""
}

// checkNumber returns what is wrong with a raw JSON value meant to be a non-negative number
// (an integer when integer is set), or "".
func checkNumber(v json.RawMessage, integer bool) string {
	var f float64
	if strings.TrimSpace(string(v)) == "null" {
		return "null is not a number"
	}
	if err := json.Unmarshal(v, &f); err != nil {
		return fmt.Sprintf("not a number: %s", truncate(string(v), 40))
	}
	if f < 0 {
		return fmt.Sprintf("negative value %s", string(v))
	}
	if integer {
		if f != math.Trunc(f) {
			return fmt.Sprintf("%s is not a whole number of bytes", string(v))
		}
		if f > math.MaxInt64/4 {
			return fmt.Sprintf("%s bytes is out of range", string(v))
		}
	}
	return ""
}

// truncate shortens a raw value quoted in a message to n bytes.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// describeJSONError turns an encoding/json error into a message with line and column.
func describeJSONError(data []byte, err error) string {
	if bytes.HasPrefix(data, []byte("ARROW1")) || bytes.HasPrefix(data, []byte{0xff, 0xff, 0xff, 0xff}) {
		// The file given where JSON belongs is the other kind chainplan reads.
		return "the file is an Arrow file (a profile?), not JSON"
	}
	var off int64 = -1
	switch e := err.(type) {
	case *json.SyntaxError:
		off = e.Offset
	case *json.UnmarshalTypeError:
		off = e.Offset
		return fmt.Sprintf("field %q: %s is not a valid %s (line %d)", e.Field, e.Value, e.Type, lineOf(data, off))
	}
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return "the document is empty or truncated"
	}
	if off >= 0 {
		return fmt.Sprintf("malformed JSON at line %d: %v", lineOf(data, off), err)
	}
	return err.Error()
}

// lineOf is the 1-based line of byte offset off in data.
func lineOf(data []byte, off int64) int {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	return bytes.Count(data[:off], []byte("\n")) + 1
}
