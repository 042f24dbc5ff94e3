package profile_test

import (
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/profile"
)

// TestExactAggregates: the exact model of a stage's rows is aggregated conservatively (a
// stage saves its input when any row says so), times by median, and ChainOf makes a
// version 2 chain of it; a profile without it stays version 1.
func TestExactAggregates(t *testing.T) {
	n := func(v int64) profile.NullInt64 { return profile.NullInt64{Int64: v, Valid: true} }
	b := func(v bool) profile.NullBool { return profile.NullBool{Bool: v, Valid: true} }
	f := func(v float64) profile.NullFloat64 { return profile.NullFloat64{Float64: v, Valid: true} }
	opts := `[{"saved_bytes": 5, "fwd_tmp_bytes": 0, "recompute_time": 0.5, "keep": [2]}]`
	row := func(rep int, in bool, rt float64) profile.Row {
		return profile.Row{StageIndex: 1, StageName: "a", StageKind: profile.KindStage, Rep: rep, Measures: profile.Measures{
			FwdTimeS: 1, BwdTimeS: 2, InBytes: 3, OutBytes: 4, SavedBytes: n(8), FwdTmpBytes: n(0), BwdTmpBytes: n(0),
			Exact: profile.Exact{SavesInput: b(in), SavesOutput: b(false), RecomputeTimeS: f(rt), RecomputeTmpBytes: n(1), OptionsJSON: opts}}}
	}
	stages := profile.Summarize([]profile.Row{row(0, false, 0.1), row(1, true, 0.3), row(2, false, 0.2)})
	e := stages[0].Exact
	if !e.SavesInput.Bool || e.SavesOutput.Bool || e.RecomputeTimeS.Float64 != 0.2 || e.OptionsJSON != opts {
		t.Fatalf("aggregated %+v", e)
	}
	c, err := profile.ChainOf(stages)
	if err != nil {
		t.Fatal(err)
	}
	s := &c.Stages[0]
	if c.Format != chainplan.ChainFormatV2 || !s.InputSaved() || s.OutputSaved() || s.Recompute() != 0.2 || len(s.Options) != 1 || s.Options[0].Keep[0] != 2 {
		t.Fatalf("chain %+v stage %+v", c, s)
	}
	stages[0].Exact = profile.Exact{}
	if c, err := profile.ChainOf(stages); err != nil || c.Format != chainplan.ChainFormat {
		t.Fatalf("without the exact model: %v, %v", c, err)
	}
	stages[0].Exact.OptionsJSON = `[{"saved_bytes": -5, "fwd_tmp_bytes": 0, "recompute_time": 0.5, "keep": []}]`
	if _, err := profile.ChainOf(stages); err == nil || !strings.Contains(err.Error(), "options[0].saved_bytes") {
		t.Fatalf("bad options: %v", err)
	}
}
