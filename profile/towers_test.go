package profile_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/profile"
)

func TestParseTowers(t *testing.T) {
	good := `{"lengths": [2, 0], "branches": [0, 0, 1], "input_bytes": [8, 8, 4], "names": ["net", "target"]}`
	tw, err := profile.ParseTowers(good)
	if err != nil || len(tw.Branches) != 3 || tw.Names[1] != "target" {
		t.Fatalf("ParseTowers = %+v, %v", tw, err)
	}
	for doc, want := range map[string]string{
		`[1]`: "not a JSON object",
		`{"lengths": [1], "branches": [], "input_bytes": []}`:                                     "K = 0",
		`{"lengths": [1], "branches": [0], "input_bytes": [1, 2]}`:                                "2 input sizes for 1 branches",
		`{"lengths": [1], "branches": [1], "input_bytes": [1]}`:                                   "out of range",
		`{"lengths": [-1], "branches": [0], "input_bytes": [1]}`:                                  "-1 stages",
		`{"lengths": [1], "branches": [0], "input_bytes": [-1]}`:                                  "negative input size",
		`{"lengths": [1], "branches": [0], "input_bytes": [1], "keep_input_grad": [true, false]}`: "2 keep_input_grad values",
		`{"lengths": [1], "branches": [0], "input_bytes": [1], "names": ["a", "b"]}`:              "2 names for 1 towers",
	} {
		_, err := profile.ParseTowers(doc)
		var me *profile.MetadataError
		if !errors.As(err, &me) || me.Key != profile.KeyTowers || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseTowers(%s) = %v, want a MetadataError containing %q", doc, err, want)
		}
	}
	var m profile.Metadata
	if tw, err := m.Towers(); tw != nil || err != nil {
		t.Fatalf("a profile without towers: %v, %v", tw, err)
	}
}

// TestMultiChainOf: the stages of two towers (one shared by two inputs) and the loss
// become a bundle of three branches.
func TestMultiChainOf(t *testing.T) {
	n := func(v int64) profile.NullInt64 { return profile.NullInt64{Int64: v, Valid: true} }
	stage := func(k int, out int64) profile.StageSummary {
		return profile.StageSummary{Index: k, Name: "s", Kind: profile.KindStage, Reps: 1, Measures: profile.Measures{
			FwdTimeS: 1, BwdTimeS: 2, InBytes: 99, OutBytes: out, SavedBytes: n(out + 1), FwdTmpBytes: n(1), BwdTmpBytes: n(2)}}
	}
	loss := profile.StageSummary{Index: 4, Name: "loss", Kind: profile.KindLoss, Reps: 1, Measures: profile.Measures{
		FwdTimeS: 0.5, BwdTimeS: 0.25, SavedBytes: n(0), FwdTmpBytes: n(3), BwdTmpBytes: n(5)}}
	stages := []profile.StageSummary{stage(1, 4), stage(2, 6), stage(3, 2), loss}
	tw := &profile.Towers{Lengths: []int{2, 1}, Branches: []int{0, 1, 0}, InputBytes: []int64{10, 20, 30},
		KeepInputGrad: []bool{false, true, false}}
	mc, err := profile.MultiChainOf(stages, tw)
	if err != nil {
		t.Fatal(err)
	}
	if got := mc.Lengths(); len(got) != 3 || got[0] != 2 || got[1] != 1 || got[2] != 2 {
		t.Fatalf("lengths %v, want [2 1 2]", got)
	}
	if mc.Branches[2].InputBytes != 30 || mc.Branches[1].Stages[0].OutBytes != 2 || !mc.Keep(2) ||
		mc.Loss != (chainplan.Loss{FwdTime: 0.5, BwdTime: 0.25, FwdTmpBytes: 3, BwdTmpBytes: 5}) {
		t.Fatalf("bundle %+v", mc)
	}
	tw.Lengths = []int{2, 2}
	if _, err := profile.MultiChainOf(stages, tw); !errors.Is(err, chainplan.ErrInvalidChain) || !strings.Contains(err.Error(), "4 in all") {
		t.Fatalf("stages that do not add up: %v", err)
	}
	// Absurd lengths whose sum wraps around to the 3 stages are refused before a tower's
	// stages are allocated (they used to panic in makeslice).
	tw.Lengths = []int{1 << 62, 1 << 62, 1<<62 + 3, 1 << 62}
	tw.Branches = []int{0, 1, 2}
	if _, err := profile.MultiChainOf(stages, tw); !errors.Is(err, chainplan.ErrInvalidChain) {
		t.Fatalf("lengths that wrap around: %v", err)
	}
}
