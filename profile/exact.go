package profile

import (
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"fmt"

	"github.com/chainplan/chainplan"
)

// NullBool is a bool that may be missing, shaped like database/sql.NullBool.
type NullBool struct {
	Bool  bool
	Valid bool // false for a null
}

// Scan implements sql.Scanner, with the conversions of sql.NullBool.
func (n *NullBool) Scan(value any) error {
	var v sql.NullBool
	if err := v.Scan(value); err != nil {
		return err
	}
	*n = NullBool(v)
	return nil
}

// Value implements driver.Valuer: the bool, or nil for a null.
func (n NullBool) Value() (driver.Value, error) { return sql.NullBool(n).Value() }

// NullFloat64 is a float64 that may be missing, shaped like database/sql.NullFloat64.
type NullFloat64 struct {
	Float64 float64
	Valid   bool // false for a null
}

// Scan implements sql.Scanner, with the conversions of sql.NullFloat64.
func (n *NullFloat64) Scan(value any) error {
	var v sql.NullFloat64
	if err := v.Scan(value); err != nil {
		return err
	}
	*n = NullFloat64(v)
	return nil
}

// Value implements driver.Valuer: the float64, or nil for a null.
func (n NullFloat64) Value() (driver.Value, error) { return sql.NullFloat64(n).Value() }

// Exact is what a profile measured of a stage's exact memory model and operation-level
// options (chainplan.chain/v2, docs/formats.md): null, or empty for OptionsJSON, when not
// measured, which a chain reads conservatively.
type Exact struct {
	SavesInput        NullBool    // the stage's backward needs its input
	SavesOutput       NullBool    // the stage's backward needs its output
	RecomputeTimeS    NullFloat64 // u_R, the recomputation right before the backward, seconds
	RecomputeTmpBytes NullInt64   // o_R, its temporary peak above what it leaves
	// OptionsJSON is the stage's operation-level options, a JSON list of
	// chainplan.StageOption objects (recompute_time in seconds); "" for none.
	OptionsJSON string
	// ReplayBytes is the size of the stage's random-number state (chainplan.Stage's
	// ReplayBytes); null or 0 for a stage that draws none.
	ReplayBytes NullInt64
}

// ParseOptions decodes and checks an options_json value (stage is 1-based, for errors):
// a JSON list of chainplan.StageOption objects with non-negative sizes and times and
// distinct node positions.
func ParseOptions(stage int, text string) ([]chainplan.StageOption, error) {
	if text == "" {
		return nil, nil
	}
	var opts []chainplan.StageOption
	if err := json.Unmarshal([]byte(text), &opts); err != nil {
		return nil, fmt.Errorf("options_json of stage %d is not a list of options: %v", stage, err)
	}
	probe := chainplan.Stage{Options: opts}
	if err := chainplan.ValidateOptions(stage, &probe); err != nil {
		return nil, err
	}
	return opts, nil
}

// aggregateExact combines the exact model of a stage's rows: a stage saves its input or
// output when any row says so (the conservative answer), times are medians and the
// temporary peak an upper median over the rows that measured them, the options are the
// first row's that has some, and the random-number state the largest measured.
func aggregateExact(rows []Row, idx []int) Exact {
	var e Exact
	var times []float64
	var tmps []int64
	for _, i := range idx {
		x := &rows[i].Exact
		if x.SavesInput.Valid {
			e.SavesInput = NullBool{Bool: e.SavesInput.Bool || x.SavesInput.Bool, Valid: true}
		}
		if x.SavesOutput.Valid {
			e.SavesOutput = NullBool{Bool: e.SavesOutput.Bool || x.SavesOutput.Bool, Valid: true}
		}
		if x.RecomputeTimeS.Valid {
			times = append(times, x.RecomputeTimeS.Float64)
		}
		if x.RecomputeTmpBytes.Valid {
			tmps = append(tmps, x.RecomputeTmpBytes.Int64)
		}
		if e.OptionsJSON == "" {
			e.OptionsJSON = x.OptionsJSON
		}
		if x.ReplayBytes.Valid { // the largest: the state the executor may keep
			e.ReplayBytes = NullInt64{Int64: max(e.ReplayBytes.Int64, x.ReplayBytes.Int64), Valid: true}
		}
	}
	if len(times) > 0 {
		e.RecomputeTimeS = NullFloat64{Float64: medianFloat(times), Valid: true}
	}
	if len(tmps) > 0 {
		e.RecomputeTmpBytes = NullInt64{Int64: upperMedian(tmps), Valid: true}
	}
	return e
}

// applyExact sets the version 2 fields of st from the stage's exact model.
func applyExact(st *chainplan.Stage, s *StageSummary) error {
	e := &s.Exact
	if e.SavesInput.Valid {
		st.SavesInput = chainplan.Bool(e.SavesInput.Bool)
	}
	if e.SavesOutput.Valid {
		st.SavesOutput = chainplan.Bool(e.SavesOutput.Bool)
	}
	if e.RecomputeTimeS.Valid {
		st.RecomputeTime = chainplan.Float(e.RecomputeTimeS.Float64)
	}
	if e.RecomputeTmpBytes.Valid {
		st.RecomputeTmpBytes = chainplan.Int(e.RecomputeTmpBytes.Int64)
	}
	if e.ReplayBytes.Valid {
		st.ReplayBytes = e.ReplayBytes.Int64
	}
	opts, err := ParseOptions(s.Index, e.OptionsJSON)
	if err != nil {
		return err
	}
	st.Options = opts
	return nil
}
