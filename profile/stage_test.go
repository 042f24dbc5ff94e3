package profile_test

import (
	"testing"

	"github.com/chainplan/chainplan/profile"
)

func TestSummarize(t *testing.T) {
	// Stage 1 has four repetitions in shuffled order with one null saved size; stage 2 has
	// one repetition with nothing measured but times and output.
	n := func(v int64) profile.NullInt64 { return profile.NullInt64{Int64: v, Valid: true} }
	null := profile.NullInt64{}
	rows := []profile.Row{
		{StageIndex: 2, StageName: "b", StageKind: profile.KindStage, Rep: 0, Measures: profile.Measures{FwdTimeS: 5, BwdTimeS: 6, OutBytes: 1}},
		{StageIndex: 1, StageName: "a", StageKind: profile.KindStage, Rep: 3, Measures: profile.Measures{FwdTimeS: 4, BwdTimeS: 1, InBytes: 10, OutBytes: 7, SavedBytes: n(40), FwdTmpBytes: n(1), BwdTmpBytes: n(4), ParamBytes: 3}},
		{StageIndex: 1, StageName: "a", StageKind: profile.KindStage, Rep: 0, Measures: profile.Measures{FwdTimeS: 1, BwdTimeS: 2, InBytes: 10, OutBytes: 7, SavedBytes: n(10), FwdTmpBytes: n(1), BwdTmpBytes: n(1), ParamBytes: 3}},
		{StageIndex: 1, StageName: "a", StageKind: profile.KindStage, Rep: 2, Measures: profile.Measures{FwdTimeS: 3, BwdTimeS: 4, InBytes: 10, OutBytes: 7, SavedBytes: null, FwdTmpBytes: n(1), BwdTmpBytes: n(3), ParamBytes: 3}},
		{StageIndex: 1, StageName: "a", StageKind: profile.KindStage, Rep: 1, Measures: profile.Measures{FwdTimeS: 2, BwdTimeS: 3, InBytes: 10, OutBytes: 7, SavedBytes: n(20), FwdTmpBytes: n(1), BwdTmpBytes: n(2), ParamBytes: 3}},
	}
	want := []profile.StageSummary{
		{Index: 1, Name: "a", Kind: profile.KindStage, Reps: 4, Measures: profile.Measures{FwdTimeS: 2.5, BwdTimeS: 2.5, InBytes: 10, OutBytes: 7,
			SavedBytes: n(20), FwdTmpBytes: n(1), BwdTmpBytes: n(3), ParamBytes: 3}},
		{Index: 2, Name: "b", Kind: profile.KindStage, Reps: 1, Measures: profile.Measures{FwdTimeS: 5, BwdTimeS: 6, OutBytes: 1}},
	}
	got := profile.Summarize(rows)
	if len(got) != len(want) {
		t.Fatalf("Summarize has %d stages, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("Summarize[%d]=%+v, want %+v", i, got[i], want[i])
		}
	}
}
