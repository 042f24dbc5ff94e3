package profilearrow_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/profile"
	"github.com/chainplan/chainplan/profilearrow"
)

// withExact sets the exact model on every stage row of p.
func withExact(p *profilearrow.Profile) {
	for i := range p.Rows {
		r := &p.Rows[i]
		if r.StageKind != profile.KindStage {
			continue
		}
		r.SavesInput = profile.NullBool{Bool: r.StageIndex%2 == 0, Valid: true}
		r.SavesOutput = profile.NullBool{Bool: r.StageIndex%3 == 0, Valid: true}
		r.RecomputeTimeS = profile.NullFloat64{Float64: r.FwdTimeS / 2, Valid: true}
		r.RecomputeTmpBytes = valid(int64(r.StageIndex) * 1024)
		if r.StageIndex == 1 {
			r.OptionsJSON = `[{"saved_bytes":65536,"fwd_tmp_bytes":0,"recompute_time":0.0001,"keep":[3,4]}]`
		}
		if r.StageIndex == 2 { // a stage that draws random numbers
			r.ReplayBytes = valid(5056)
		}
	}
}

// TestExactColumnsRoundTrip: the optional columns survive a write and a read, the chain
// made of them is version 2, and a profile without them still reads as version 1.
func TestExactColumnsRoundTrip(t *testing.T) {
	p := sampleProfile(4, 3, 7)
	withExact(p)
	got, err := profilearrow.Read(mustEncode(t, p, profilearrow.WriteOptions{Compression: profilearrow.CompressionZSTD}))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Rows, p.Rows) {
		t.Fatalf("rows changed in the round trip:\n got %+v\nwant %+v", got.Rows[0], p.Rows[0])
	}
	c, err := profile.ChainOf(profile.Summarize(got.Rows))
	if err != nil {
		t.Fatal(err)
	}
	if c.Format != chainplan.ChainFormatV2 || !c.Stages[1].InputSaved() || c.Stages[0].InputSaved() ||
		len(c.Stages[0].Options) != 1 || c.Stages[0].Options[0].Keep[1] != 4 {
		t.Fatalf("chain %+v", c.Stages[0])
	}
	if c.Stages[1].ReplayBytes != 5056 || c.Stages[0].ReplayBytes != 0 {
		t.Fatalf("replay_bytes of stages 1 and 2: %d, %d; want 0, 5056", c.Stages[0].ReplayBytes, c.Stages[1].ReplayBytes)
	}
}

// TestExactColumnErrors: a bad value in an optional column is refused naming the column.
func TestExactColumnErrors(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(r *profile.Row)
		wantCol string
		wantMsg string
	}{
		{"NegativeRecompute", func(r *profile.Row) { r.RecomputeTimeS = profile.NullFloat64{Float64: -1, Valid: true} },
			profilearrow.ColRecomputeTimeS, "is not a time"},
		{"NegativeTmp", func(r *profile.Row) { r.RecomputeTmpBytes = valid(-3) }, profilearrow.ColRecomputeTmpBytes, "negative size"},
		{"NegativeReplay", func(r *profile.Row) { r.ReplayBytes = valid(-1) }, profilearrow.ColReplayBytes, "negative size"},
		{"BadOptionsJSON", func(r *profile.Row) { r.OptionsJSON = `{"saved_bytes": 3}` }, profilearrow.ColOptionsJSON, "not a list of options"},
		{"BadOption", func(r *profile.Row) {
			r.OptionsJSON = `[{"saved_bytes":1,"fwd_tmp_bytes":0,"recompute_time":0,"keep":[2,2]}]`
		}, profilearrow.ColOptionsJSON, "node position 2 twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := sampleProfile(3, 2, 9)
			withExact(p)
			tt.edit(&p.Rows[2])
			_, err := profilearrow.Read(mustEncode(t, p, profilearrow.WriteOptions{}))
			var pe *profilearrow.Error
			if !errors.As(err, &pe) || pe.Column != tt.wantCol || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("Read: %v; want an error on %s containing %q", err, tt.wantCol, tt.wantMsg)
			}
		})
	}
}
