package profile

import (
	"database/sql"
	"database/sql/driver"
	"slices"
	"sort"
)

// Stage kinds: Row.StageKind and StageSummary.Kind hold one of these.
const (
	KindStage = "stage" // a stage 1..L of the chain
	KindLoss  = "loss"  // the loss, stage L+1
)

// NullInt64 is an int64 that may be missing: a null in a profile file or in the database.
// It has the shape of database/sql.NullInt64 (either converts to the other) and, like it,
// is an SQL argument and a Scan destination.
type NullInt64 struct {
	Int64 int64
	Valid bool // false for a null
}

// Scan implements sql.Scanner, with the conversions of sql.NullInt64.
func (n *NullInt64) Scan(value any) error {
	var v sql.NullInt64
	if err := v.Scan(value); err != nil {
		return err
	}
	*n = NullInt64(v)
	return nil
}

// Value implements driver.Valuer: the int64, or nil for a null.
func (n NullInt64) Value() (driver.Value, error) { return sql.NullInt64(n).Value() }

// Measures are what a stage costs: measured once (a Row) or the medians over the
// repetitions (a StageSummary). The nullable sizes are null when the profiler did not measure
// them (chainplan.record measures times and outputs only).
type Measures struct {
	FwdTimeS    float64   // u_F, the forward's time, seconds
	BwdTimeS    float64   // u_B, the backward's time, seconds
	InBytes     int64     // size of the stage's input; stage 1's is the chain input a_0
	OutBytes    int64     // a, size of the output and of its gradient
	SavedBytes  NullInt64 // ā, all a forward with graph keeps for the backward, a included
	FwdTmpBytes NullInt64 // o_F, temporary peak of the forward
	BwdTmpBytes NullInt64 // o_B, temporary peak of the backward
	ParamBytes  int64     // the stage's weights
	Exact                 // the exact memory model and options (chainplan.chain/v2)
}

// Row is one measurement of one stage: a row of a profile file and of the store's
// measurements table.
type Row struct {
	StageIndex int    // 1..L, L+1 for the loss
	StageName  string // the module's name
	StageKind  string // KindStage or KindLoss
	Rep        int    // repetition or training step, ≥ 0, unique per stage
	Measures
	// Parallel holds the stage's parallel fields as this row recorded them (zero when the
	// file has none): shapes, counts and modules are the same on every row of a stage.
	Parallel Parallel
}

// StageSummary is the summary of one stage's measurements: the stage aggregated over its
// repetitions (see Summarize), a row of the store's stages table, and what ChainOf makes a
// chain of. (A Row is one measurement; a chain's element is a chainplan.Stage.)
type StageSummary struct {
	Index int    // 1..L, L+1 for the loss
	Name  string // the module's name
	Kind  string // KindStage or KindLoss
	Reps  int    // the number of rows aggregated
	Measures
	// Parallel holds the stage's parallel fields: the rows' shapes, counts and modules,
	// and per batch size the median of their batch times.
	Parallel Parallel
}

// Summarize aggregates rows into one StageSummary per stage index, in index order (the
// loss, if any, last). Every value is the median of the stage's rows, nulls left out (null when
// every row is null). Times are medians (the mean of the two middle values for an even
// count); sizes are upper medians (the larger middle value, an observed size that errs on
// the side of more memory). Name and Kind are the first row's.
func Summarize(rows []Row) []StageSummary {
	byIndex := make(map[int][]int) // stage index → row numbers
	for i, r := range rows {
		byIndex[r.StageIndex] = append(byIndex[r.StageIndex], i)
	}
	indices := make([]int, 0, len(byIndex))
	for k := range byIndex {
		indices = append(indices, k)
	}
	sort.Ints(indices)
	out := make([]StageSummary, 0, len(indices))
	f := make([]float64, 0, 32)
	n := make([]int64, 0, 32)
	medF := func(get func(*Measures) float64, idx []int) float64 {
		f = f[:0]
		for _, i := range idx {
			f = append(f, get(&rows[i].Measures))
		}
		return medianFloat(f)
	}
	medN := func(get func(*Measures) NullInt64, idx []int) NullInt64 {
		n = n[:0]
		for _, i := range idx {
			if v := get(&rows[i].Measures); v.Valid {
				n = append(n, v.Int64)
			}
		}
		if len(n) == 0 {
			return NullInt64{}
		}
		return NullInt64{Int64: upperMedian(n), Valid: true}
	}
	valid := func(v int64) NullInt64 { return NullInt64{Int64: v, Valid: true} }
	for _, k := range indices {
		idx := byIndex[k]
		first := &rows[idx[0]]
		out = append(out, StageSummary{Index: k, Name: first.StageName, Kind: first.StageKind, Reps: len(idx),
			Measures: Measures{
				FwdTimeS:    medF(func(m *Measures) float64 { return m.FwdTimeS }, idx),
				BwdTimeS:    medF(func(m *Measures) float64 { return m.BwdTimeS }, idx),
				InBytes:     medN(func(m *Measures) NullInt64 { return valid(m.InBytes) }, idx).Int64,
				OutBytes:    medN(func(m *Measures) NullInt64 { return valid(m.OutBytes) }, idx).Int64,
				SavedBytes:  medN(func(m *Measures) NullInt64 { return m.SavedBytes }, idx),
				FwdTmpBytes: medN(func(m *Measures) NullInt64 { return m.FwdTmpBytes }, idx),
				BwdTmpBytes: medN(func(m *Measures) NullInt64 { return m.BwdTmpBytes }, idx),
				ParamBytes:  medN(func(m *Measures) NullInt64 { return valid(m.ParamBytes) }, idx).Int64,
				Exact:       aggregateExact(rows, idx),
			},
			Parallel: aggregateParallel(rows, idx)})
	}
	return out
}

// medianFloat returns the median of v (reordering v); v is not empty.
func medianFloat(v []float64) float64 {
	slices.Sort(v)
	m := len(v) / 2
	if len(v)%2 == 1 {
		return v[m]
	}
	return v[m-1] + (v[m]-v[m-1])/2
}

// upperMedian returns the upper median of v (reordering v); v is not empty.
func upperMedian(v []int64) int64 {
	slices.Sort(v)
	return v[len(v)/2]
}
