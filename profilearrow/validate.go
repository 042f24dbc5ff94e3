package profilearrow

import (
	"fmt"
	"math"

	"github.com/chainplan/chainplan/profile"
)

// checkRow checks the values of one row on their own; row is its 0-based index in the file.
func checkRow(r *profile.Row, row int) error {
	bad := func(col, msg string) error {
		return &Error{Column: col, Row: row, Stage: r.StageIndex, Rep: r.Rep, Msg: msg}
	}
	if r.StageKind != profile.KindStage && r.StageKind != profile.KindLoss {
		return bad(ColStageKind, fmt.Sprintf("%q, want %q or %q", r.StageKind, profile.KindStage, profile.KindLoss))
	}
	for _, f := range []struct {
		col string
		v   float64
	}{{ColFwdTimeS, r.FwdTimeS}, {ColBwdTimeS, r.BwdTimeS}} {
		switch {
		case math.IsNaN(f.v):
			return bad(f.col, "NaN is not a time")
		case math.IsInf(f.v, 0):
			return bad(f.col, "infinite time")
		case f.v < 0:
			return bad(f.col, fmt.Sprintf("negative time %g s", f.v))
		}
	}
	for _, f := range []struct {
		col string
		v   profile.NullInt64
	}{
		{ColInBytes, known(r.InBytes)}, {ColOutBytes, known(r.OutBytes)},
		{ColSavedBytes, r.SavedBytes}, {ColFwdTmpBytes, r.FwdTmpBytes}, {ColBwdTmpBytes, r.BwdTmpBytes},
		{ColParamBytes, known(r.ParamBytes)},
	} {
		if f.v.Valid && f.v.Int64 < 0 {
			return bad(f.col, fmt.Sprintf("negative size %d bytes", f.v.Int64))
		}
	}
	if r.StageKind == profile.KindLoss {
		// Chain contract (DESIGN.md): the loss's output and saved sizes are 0.
		if r.OutBytes != 0 {
			return bad(ColOutBytes, fmt.Sprintf("%d for the loss, want 0 (the loss output counts as nothing; "+
				"put what its backward needs in bwd_tmp_bytes)", r.OutBytes))
		}
		if r.SavedBytes.Valid && r.SavedBytes.Int64 != 0 {
			return bad(ColSavedBytes, fmt.Sprintf("%d for the loss, want 0 or null (put what the loss keeps "+
				"for its backward in bwd_tmp_bytes)", r.SavedBytes.Int64))
		}
	}
	return nil
}

// checkSavedCoversOutput checks ā ≥ a for every stage but the last ones, whose output the
// loss may consume (the chain contract, docs/formats.md): the last stage of the profile,
// or of each tower of a profile of towers; it needs the whole file to know them.
func checkSavedCoversOutput(rows []profile.Row, last map[int]bool) error {
	for i := range rows {
		r := &rows[i]
		if r.StageKind == profile.KindLoss || last[r.StageIndex] || !r.SavedBytes.Valid || r.SavedBytes.Int64 >= r.OutBytes {
			continue
		}
		return &Error{Column: ColSavedBytes, Row: i, Stage: r.StageIndex, Rep: r.Rep,
			Msg: fmt.Sprintf("%d is smaller than out_bytes %d (saved bytes include the output; only the last "+
				"stage, whose output the loss consumes, may keep less)", r.SavedBytes.Int64, r.OutBytes)}
	}
	return nil
}

// stageSeen is what checkStructure remembers of a stage index.
type stageSeen struct {
	name, kind string
	reps       map[int]bool
}

// checkStructure checks the rows as a whole: stages numbered 1..L without gaps, at most
// one loss at L+1, one name and kind per stage, no repetition twice, and for a profile of
// towers (towers not nil) as many stages as the towers have.
func checkStructure(rows []profile.Row, towers *profile.Towers) error {
	if len(rows) == 0 {
		return fileError("the profile has no rows", nil)
	}
	seen := make(map[int]*stageSeen)
	lossIndex, lossRow := 0, -1
	maxStage := 0
	for i := range rows {
		r := &rows[i]
		bad := func(col, msg string) error {
			return &Error{Column: col, Row: i, Stage: r.StageIndex, Rep: r.Rep, Msg: msg}
		}
		s, ok := seen[r.StageIndex]
		if !ok {
			s = &stageSeen{name: r.StageName, kind: r.StageKind, reps: make(map[int]bool, 1)}
			seen[r.StageIndex] = s
		}
		if r.StageName != s.name {
			return bad(ColStageName, fmt.Sprintf("%q, but earlier rows of stage %d say %q", r.StageName, r.StageIndex, s.name))
		}
		if r.StageKind != s.kind {
			return bad(ColStageKind, fmt.Sprintf("%q, but earlier rows of stage %d say %q", r.StageKind, r.StageIndex, s.kind))
		}
		if s.reps[r.Rep] {
			return bad(ColRep, fmt.Sprintf("repetition %d of stage %d appears twice", r.Rep, r.StageIndex))
		}
		s.reps[r.Rep] = true
		switch r.StageKind {
		case profile.KindLoss:
			if lossRow >= 0 && r.StageIndex != lossIndex {
				return bad(ColStageIndex, fmt.Sprintf("a second loss stage (the loss is stage %d)", lossIndex))
			}
			lossIndex, lossRow = r.StageIndex, i
		default:
			maxStage = max(maxStage, r.StageIndex)
		}
	}
	if maxStage == 0 {
		return &Error{Column: ColStageKind, Row: -1, Msg: fmt.Sprintf("no row of kind %q (the chain has no stages)", profile.KindStage)}
	}
	if lossRow >= 0 && lossIndex != maxStage+1 {
		r := &rows[lossRow]
		return &Error{Column: ColStageIndex, Row: lossRow, Stage: r.StageIndex, Rep: r.Rep,
			Msg: fmt.Sprintf("the loss is stage %d, want %d (L+1, after the last stage %d)", lossIndex, maxStage+1, maxStage)}
	}
	if len(seen) != maxStage+btoi(lossRow >= 0) {
		var missing []int
		for k := 1; k <= maxStage && len(missing) < 5; k++ {
			if seen[k] == nil {
				missing = append(missing, k)
			}
		}
		return &Error{Column: ColStageIndex, Row: -1,
			Msg: fmt.Sprintf("stages must be numbered 1..%d without gaps; missing: %v", maxStage, missing)}
	}
	last := map[int]bool{maxStage: true}
	if towers != nil {
		end := 0
		for _, l := range towers.Lengths {
			if end += l; l > 0 {
				last[end] = true
			}
		}
		if end != maxStage {
			return &Error{Column: ColStageIndex, Row: -1, Msg: fmt.Sprintf(
				"the schema metadata's towers have %v stages (%d in all), the profile %d", towers.Lengths, end, maxStage)}
		}
	}
	return checkSavedCoversOutput(rows, last)
}

// known returns v as a non-null profile.NullInt64.
func known(v int64) profile.NullInt64 { return profile.NullInt64{Int64: v, Valid: true} }

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
