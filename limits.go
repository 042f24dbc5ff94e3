package chainplan

import (
	"fmt"
	"math"
	"os"
	"strings"
)

// DefaultTableLimitBytes is the memory the tables of one planner call may take when
// $CHAINPLAN_TABLE_LIMIT is not set: 2 GiB, a fraction of what a workstation or a CI
// runner has, and far above what the chains chainplan ships need (rotor at 500 slots on
// the largest, 77 layers, takes about 15 MiB; 2 GiB holds about 900 stages there). A
// planner computes the size of its tables from the chain and its options before it
// allocates them, and refuses a request over the limit with a *SizeError instead of
// letting the Go runtime abort the process.
const DefaultTableLimitBytes int64 = 2 << 30

// TableLimitEnv names the environment variable that overrides DefaultTableLimitBytes, a
// size as the CLI reads budgets ("8GiB", "500MB", "3e9"). It is read by every planner
// call, so it holds for the CLI and for the Python package alike; in Python set it before
// the process starts (the Go runtime reads the environment when it loads).
const TableLimitEnv = "CHAINPLAN_TABLE_LIMIT"

// TableLimit returns the most memory, in bytes, the tables of one planner call may take:
// $CHAINPLAN_TABLE_LIMIT when it is set, else DefaultTableLimitBytes. Errors: an
// *OptionError (errors.Is ErrUnsupported) naming the variable when it is not a positive
// size.
func TableLimit() (int64, error) {
	v, ok := os.LookupEnv(TableLimitEnv)
	if !ok || strings.TrimSpace(v) == "" {
		return DefaultTableLimitBytes, nil
	}
	b, err := ParseBytes(v)
	if err == nil && b <= 0 {
		err = fmt.Errorf("%q: the limit must be positive", v)
	}
	if err != nil {
		return 0, &OptionError{Planner: "planner", Field: TableLimitEnv, Msg: err.Error()}
	}
	return b, nil
}

// CheckTables returns nil when tables of needBytes fit TableLimit, and otherwise a
// *SizeError for algo on a chain of stages stages (the loss not counted) whose tables are
// described by what; fix, when not nil, says what to do instead given the limit (for
// example the largest slot count that fits). needBytes is a float64 so that a product of
// table dimensions cannot overflow before it is compared. A planner calls it before it
// allocates the tables, never after.
func CheckTables(algo string, stages int, what string, needBytes float64, fix func(limitBytes int64) string) error {
	limit, err := TableLimit()
	if err != nil {
		return err
	}
	if needBytes <= float64(limit) {
		return nil
	}
	e := &SizeError{Algo: algo, Stages: stages, What: what, NeedBytes: saturate(needBytes), LimitBytes: limit}
	if fix != nil {
		e.Fix = fix(limit)
	}
	return e
}

// SizeError reports a request a planner refuses before it starts: its tables would take
// more memory than the limit (TableLimit), or, for a dynamic program whose time grows
// faster than the cube of the chain's length, more steps than the planner's own limit.
// errors.Is(err, ErrUnsupported) holds, so the CLI exits with status 2.
type SizeError struct {
	Algo       string // the planner
	Stages     int    // the chain's length in stages (layers), the loss not counted
	What       string // the tables or the work refused, with their dimensions
	NeedBytes  int64  // the memory the tables would take; 0 when the limit is on steps
	AtLeast    bool   // the need is a lower bound: tables or work that grow as the planner explores
	LimitBytes int64  // TableLimit when NeedBytes is set
	NeedSteps  float64
	LimitSteps float64 // the planner's limit on steps when NeedSteps is set
	Unit       string  // what NeedSteps counts, "steps" when empty
	Fix        string  // what to do instead ("use --slots 120 or fewer"), "" when nothing
}

func (e *SizeError) Error() string {
	var over string
	if e.NeedSteps > 0 {
		unit := e.Unit
		if unit == "" {
			unit = "steps"
		}
		about := "about "
		switch {
		case e.AtLeast:
			about = "more than "
		case whole(e.NeedSteps):
			about = "" // an exact count
		}
		over = fmt.Sprintf("%s would take %s%s %s, over %s's limit of %s", e.What, about, count(e.NeedSteps), unit, e.Algo,
			count(e.LimitSteps))
	} else {
		more := ""
		if e.AtLeast {
			more = "more than "
		}
		over = fmt.Sprintf("%s would take %s%s, over the limit of %s (%s)", e.What, more, bytesAndUnit(e.NeedBytes),
			FormatBytes(e.LimitBytes), TableLimitEnv)
	}
	msg := fmt.Sprintf("%s: a chain of %d stages is too large: %s", e.Algo, e.Stages, over)
	if e.Fix != "" {
		msg += "; " + e.Fix
	}
	return msg
}

// Unwrap makes errors.Is(err, ErrUnsupported) true.
func (e *SizeError) Unwrap() error { return ErrUnsupported }

// count writes a count of steps or cells: whole below a million, else with three digits.
func count(v float64) string {
	if whole(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

func whole(v float64) bool { return v < 1e6 && v == math.Trunc(v) }

// saturate converts a byte count computed in floating point to an int64, MaxInt64 when it
// does not fit.
func saturate(b float64) int64 {
	if b >= math.MaxInt64 || math.IsNaN(b) {
		return math.MaxInt64
	}
	return int64(b)
}
