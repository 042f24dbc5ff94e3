package profile_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/profile"
)

func TestChainOf(t *testing.T) {
	n := func(v int64) profile.NullInt64 { return profile.NullInt64{Int64: v, Valid: true} }
	stage := func(k int) profile.StageSummary {
		return profile.StageSummary{Index: k, Name: "s", Kind: profile.KindStage, Reps: 1, Measures: profile.Measures{
			FwdTimeS: 1, BwdTimeS: 2, InBytes: int64(10 * k), OutBytes: 4,
			SavedBytes: n(6), FwdTmpBytes: n(1), BwdTmpBytes: n(2), ParamBytes: 9}}
	}
	loss := profile.StageSummary{Index: 3, Name: "loss", Kind: profile.KindLoss, Reps: 1, Measures: profile.Measures{
		FwdTimeS: 0.5, BwdTimeS: 0.25, SavedBytes: n(0), FwdTmpBytes: n(3), BwdTmpBytes: n(5)}}
	tests := []struct {
		name      string
		stages    []profile.StageSummary
		wantErr   error
		wantField string
	}{
		{"with loss", []profile.StageSummary{stage(1), stage(2), loss}, nil, ""},
		{"without loss", []profile.StageSummary{stage(1), stage(2)}, nil, ""},
		{"gap", []profile.StageSummary{stage(1), stage(3)}, chainplan.ErrInvalidChain, ""},
		{"loss first", []profile.StageSummary{loss, stage(1)}, chainplan.ErrInvalidChain, ""},
		{"no saved", func() []profile.StageSummary {
			s := stage(1)
			s.SavedBytes = profile.NullInt64{}
			return []profile.StageSummary{s}
		}(),
			chainplan.ErrInvalidChain, "saved_bytes"},
		{"loss without tmp", func() []profile.StageSummary {
			l := loss
			l.Index, l.BwdTmpBytes = 2, profile.NullInt64{}
			return []profile.StageSummary{stage(1), l}
		}(), chainplan.ErrInvalidChain, "bwd_tmp_bytes"},
		{"empty", nil, chainplan.ErrInvalidChain, "stages"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := profile.ChainOf(tt.stages)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("ChainOf error %v, want %v", err, tt.wantErr)
			}
			if tt.wantField != "" {
				var ce *chainplan.ChainError
				if !errors.As(err, &ce) || ce.Field != tt.wantField {
					t.Fatalf("ChainOf error %v, want a ChainError on %s", err, tt.wantField)
				}
			}
			if err != nil {
				return
			}
			if got, want := c.InputBytes, int64(10); got != want {
				t.Errorf("InputBytes=%d, want %d (stage 1's in_bytes)", got, want)
			}
			if got, want := c.Stages[1], (chainplan.Stage{Name: "s", FwdTime: 1, BwdTime: 2, OutBytes: 4, SavedBytes: 6,
				FwdTmpBytes: 1, BwdTmpBytes: 2, ParamBytes: 9}); !reflect.DeepEqual(got, want) {
				t.Errorf("Stages[1]=%+v, want %+v", got, want)
			}
			wantLoss := chainplan.Loss{}
			if len(tt.stages) == 3 {
				wantLoss = chainplan.Loss{FwdTime: 0.5, BwdTime: 0.25, FwdTmpBytes: 3, BwdTmpBytes: 5}
			}
			if c.Loss != wantLoss {
				t.Errorf("Loss=%+v, want %+v", c.Loss, wantLoss)
			}
		})
	}
}
