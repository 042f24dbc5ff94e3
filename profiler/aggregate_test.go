package profiler_test

import (
	"errors"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/profiler"
)

func TestStagesMedians(t *testing.T) {
	// Stage 1 has four repetitions in shuffled order with one null saved size; stage 2 has
	// one repetition with nothing measured but times and output.
	n := func(v int64) profiler.NullInt64 { return profiler.NullInt64{Int64: v, Valid: true} }
	null := profiler.NullInt64{}
	p := &profiler.Profile{Rows: []profiler.Row{
		{StageIndex: 2, StageName: "b", StageKind: profiler.KindStage, Rep: 0, FwdTimeS: 5, BwdTimeS: 6, OutBytes: 1},
		{StageIndex: 1, StageName: "a", StageKind: profiler.KindStage, Rep: 3, FwdTimeS: 4, BwdTimeS: 1, InBytes: 10, OutBytes: 7, SavedBytes: n(40), FwdTmpBytes: n(1), BwdTmpBytes: n(4), ParamBytes: 3},
		{StageIndex: 1, StageName: "a", StageKind: profiler.KindStage, Rep: 0, FwdTimeS: 1, BwdTimeS: 2, InBytes: 10, OutBytes: 7, SavedBytes: n(10), FwdTmpBytes: n(1), BwdTmpBytes: n(1), ParamBytes: 3},
		{StageIndex: 1, StageName: "a", StageKind: profiler.KindStage, Rep: 2, FwdTimeS: 3, BwdTimeS: 4, InBytes: 10, OutBytes: 7, SavedBytes: null, FwdTmpBytes: n(1), BwdTmpBytes: n(3), ParamBytes: 3},
		{StageIndex: 1, StageName: "a", StageKind: profiler.KindStage, Rep: 1, FwdTimeS: 2, BwdTimeS: 3, InBytes: 10, OutBytes: 7, SavedBytes: n(20), FwdTmpBytes: n(1), BwdTmpBytes: n(2), ParamBytes: 3},
	}}
	want := []profiler.Stage{
		{Index: 1, Name: "a", Kind: profiler.KindStage, Reps: 4, FwdTimeS: 2.5, BwdTimeS: 2.5, InBytes: 10, OutBytes: 7,
			SavedBytes: n(20), FwdTmpBytes: n(1), BwdTmpBytes: n(3), ParamBytes: 3},
		{Index: 2, Name: "b", Kind: profiler.KindStage, Reps: 1, FwdTimeS: 5, BwdTimeS: 6, OutBytes: 1},
	}
	got := p.Stages()
	if len(got) != len(want) {
		t.Fatalf("Stages() has %d stages, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("Stages()[%d]=%+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestChainOf(t *testing.T) {
	n := func(v int64) profiler.NullInt64 { return profiler.NullInt64{Int64: v, Valid: true} }
	stage := func(k int) profiler.Stage {
		return profiler.Stage{Index: k, Name: "s", Kind: profiler.KindStage, Reps: 1, FwdTimeS: 1, BwdTimeS: 2,
			InBytes: int64(10 * k), OutBytes: 4, SavedBytes: n(6), FwdTmpBytes: n(1), BwdTmpBytes: n(2), ParamBytes: 9}
	}
	loss := profiler.Stage{Index: 3, Name: "loss", Kind: profiler.KindLoss, Reps: 1, FwdTimeS: 0.5, BwdTimeS: 0.25,
		SavedBytes: n(0), FwdTmpBytes: n(3), BwdTmpBytes: n(5)}
	tests := []struct {
		name      string
		stages    []profiler.Stage
		wantErr   error
		wantField string
	}{
		{"with loss", []profiler.Stage{stage(1), stage(2), loss}, nil, ""},
		{"without loss", []profiler.Stage{stage(1), stage(2)}, nil, ""},
		{"gap", []profiler.Stage{stage(1), stage(3)}, chainplan.ErrInvalidChain, ""},
		{"loss first", []profiler.Stage{loss, stage(1)}, chainplan.ErrInvalidChain, ""},
		{"no saved", func() []profiler.Stage {
			s := stage(1)
			s.SavedBytes = profiler.NullInt64{}
			return []profiler.Stage{s}
		}(),
			chainplan.ErrInvalidChain, "saved_bytes"},
		{"loss without tmp", func() []profiler.Stage {
			l := loss
			l.Index, l.BwdTmpBytes = 2, profiler.NullInt64{}
			return []profiler.Stage{stage(1), l}
		}(), chainplan.ErrInvalidChain, "bwd_tmp_bytes"},
		{"empty", nil, chainplan.ErrInvalidChain, "stages"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := profiler.ChainOf(tt.stages)
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
				FwdTmpBytes: 1, BwdTmpBytes: 2, ParamBytes: 9}); got != want {
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
