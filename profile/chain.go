package profile

import (
	"fmt"

	"github.com/chainplan/chainplan"
)

// ChainOf turns aggregated stages (in index order, the loss last, as Summarize returns
// them) into a validated chain: chainplan.chain/v2 when the profile measured the exact
// memory model of some stage (Exact), else v1. The chain input a_0 is stage 1's InBytes,
// and the loss is all zero when absent. A stage whose saved or temporary sizes
// were never measured (null) makes a *chainplan.ChainError naming the stage and the field,
// since no planner can use it; stages out of order wrap chainplan.ErrInvalidChain.
func ChainOf(stages []StageSummary) (*chainplan.Chain, error) {
	c := &chainplan.Chain{Format: chainplan.ChainFormat}
	for i := range stages {
		s := &stages[i]
		if s.Kind == KindLoss {
			if i != len(stages)-1 {
				return nil, fmt.Errorf("%w: the loss (stage %d) is not the last stage", chainplan.ErrInvalidChain, s.Index)
			}
			var err error
			if c.Loss, err = lossOf(s); err != nil {
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
		if err := applyExact(&st, s); err != nil {
			return nil, err
		}
		c.Stages = append(c.Stages, st)
	}
	c.Format = c.FormatTag()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// need returns a memory size a planner needs, or a *chainplan.ChainError naming the stage
// and the field when the profile never measured it.
func need(s *StageSummary, field string, v NullInt64) (int64, error) {
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

// lossOf returns the chain's loss of the loss row s.
func lossOf(s *StageSummary) (chainplan.Loss, error) {
	l := chainplan.Loss{FwdTime: s.FwdTimeS, BwdTime: s.BwdTimeS}
	var err error
	if l.FwdTmpBytes, err = need(s, "fwd_tmp_bytes", s.FwdTmpBytes); err != nil {
		return l, err
	}
	l.BwdTmpBytes, err = need(s, "bwd_tmp_bytes", s.BwdTmpBytes)
	return l, err
}
