package profiler

import (
	"fmt"
	"slices"
	"sort"

	"github.com/chainplan/chainplan"
)

// Stage is one stage of a profile aggregated over its repetitions: every value is the
// median of the stage's rows (nulls left out; null when every row is null).
type Stage struct {
	Index       int    // 1..L, L+1 for the loss
	Name        string // the module's name
	Kind        string // KindStage or KindLoss
	Reps        int    // the number of rows aggregated
	FwdTimeS    float64
	BwdTimeS    float64
	InBytes     int64
	OutBytes    int64
	SavedBytes  NullInt64
	FwdTmpBytes NullInt64
	BwdTmpBytes NullInt64
	ParamBytes  int64
}

// Stages aggregates the rows of p into one Stage per stage index, in index order (the
// loss, if any, last). Times are medians (the mean of the two middle values for an even
// count); sizes are upper medians (the larger middle value, an observed size that errs on
// the side of more memory).
func (p *Profile) Stages() []Stage {
	byIndex := make(map[int][]int) // stage index → row numbers
	for i, r := range p.Rows {
		byIndex[r.StageIndex] = append(byIndex[r.StageIndex], i)
	}
	indices := make([]int, 0, len(byIndex))
	for k := range byIndex {
		indices = append(indices, k)
	}
	sort.Ints(indices)
	out := make([]Stage, 0, len(indices))
	f := make([]float64, 0, 32)
	n := make([]int64, 0, 32)
	medF := func(get func(*Row) float64, rows []int) float64 {
		f = f[:0]
		for _, i := range rows {
			f = append(f, get(&p.Rows[i]))
		}
		return medianFloat(f)
	}
	medN := func(get func(*Row) NullInt64, rows []int) NullInt64 {
		n = n[:0]
		for _, i := range rows {
			if v := get(&p.Rows[i]); v.Valid {
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
		rows := byIndex[k]
		first := &p.Rows[rows[0]]
		out = append(out, Stage{
			Index:       k,
			Name:        first.StageName,
			Kind:        first.StageKind,
			Reps:        len(rows),
			FwdTimeS:    medF(func(r *Row) float64 { return r.FwdTimeS }, rows),
			BwdTimeS:    medF(func(r *Row) float64 { return r.BwdTimeS }, rows),
			InBytes:     medN(func(r *Row) NullInt64 { return valid(r.InBytes) }, rows).Int64,
			OutBytes:    medN(func(r *Row) NullInt64 { return valid(r.OutBytes) }, rows).Int64,
			SavedBytes:  medN(func(r *Row) NullInt64 { return r.SavedBytes }, rows),
			FwdTmpBytes: medN(func(r *Row) NullInt64 { return r.FwdTmpBytes }, rows),
			BwdTmpBytes: medN(func(r *Row) NullInt64 { return r.BwdTmpBytes }, rows),
			ParamBytes:  medN(func(r *Row) NullInt64 { return valid(r.ParamBytes) }, rows).Int64,
		})
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

// Chain returns the chainplan.chain/v1 chain of the profile: the medians of Stages, the
// chain input a_0 taken as stage 1's in_bytes, and the loss row (all zero when absent).
// A stage whose saved or temporary sizes were never measured (nulls, as chainplan.record
// writes) makes a *chainplan.ChainError naming the stage and the field, since no planner
// can use it.
func (p *Profile) Chain() (*chainplan.Chain, error) {
	return ChainOf(p.Stages())
}

// ChainOf turns aggregated stages (in index order, the loss last, as Stages returns them)
// into a validated chain. See (*Profile).Chain.
func ChainOf(stages []Stage) (*chainplan.Chain, error) {
	c := &chainplan.Chain{Format: chainplan.ChainFormat}
	need := func(s *Stage, field string, v NullInt64) (int64, error) {
		if !v.Valid {
			where := s.Index
			if s.Kind == KindLoss {
				where = chainplan.LossStage
			}
			return 0, &chainplan.ChainError{Stage: where, Name: s.Name, Field: field,
				Msg: "not measured in the profile (null in every repetition); planners need it"}
		}
		return v.Int64, nil
	}
	for i := range stages {
		s := &stages[i]
		if s.Kind == KindLoss {
			if i != len(stages)-1 {
				return nil, fmt.Errorf("%w: the loss (stage %d) is not the last stage", chainplan.ErrInvalidChain, s.Index)
			}
			var err error
			c.Loss.FwdTime, c.Loss.BwdTime = s.FwdTimeS, s.BwdTimeS
			if c.Loss.FwdTmpBytes, err = need(s, "fwd_tmp_bytes", s.FwdTmpBytes); err != nil {
				return nil, err
			}
			if c.Loss.BwdTmpBytes, err = need(s, "bwd_tmp_bytes", s.BwdTmpBytes); err != nil {
				return nil, err
			}
			continue
		}
		if s.Index != i+1 {
			return nil, fmt.Errorf("%w: stage %d is at position %d (stages must be numbered 1..L)",
				chainplan.ErrInvalidChain, s.Index, i+1)
		}
		st := chainplan.Stage{Name: s.Name, FwdTime: s.FwdTimeS, BwdTime: s.BwdTimeS, OutBytes: s.OutBytes, ParamBytes: s.ParamBytes}
		var err error
		if st.SavedBytes, err = need(s, "saved_bytes", s.SavedBytes); err != nil {
			return nil, err
		}
		if st.FwdTmpBytes, err = need(s, "fwd_tmp_bytes", s.FwdTmpBytes); err != nil {
			return nil, err
		}
		if st.BwdTmpBytes, err = need(s, "bwd_tmp_bytes", s.BwdTmpBytes); err != nil {
			return nil, err
		}
		if i == 0 {
			c.InputBytes = s.InBytes
		}
		c.Stages = append(c.Stages, st)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}
