package profilearrow_test

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/chainplan/chainplan/profile"
	"github.com/chainplan/chainplan/profilearrow"
)

func TestReadRejectsBadValues(t *testing.T) {
	// sampleProfile(4, 3): rows 0..11 are stages 1..4 (row = 3*(stage-1) + rep), rows
	// 12..14 the loss (stage 5).
	tests := []struct {
		name   string
		mutate func(p *profilearrow.Profile)
		want   []string // substrings of the error
	}{
		{"negative fwd time", func(p *profilearrow.Profile) { p.Rows[4].FwdTimeS = -1e-3 },
			[]string{`column "fwd_time_s", row 4 (stage 2, rep 1)`, "negative time"}},
		{"NaN fwd time", func(p *profilearrow.Profile) { p.Rows[0].FwdTimeS = math.NaN() },
			[]string{`column "fwd_time_s", row 0 (stage 1, rep 0)`, "NaN"}},
		{"infinite bwd time", func(p *profilearrow.Profile) { p.Rows[7].BwdTimeS = math.Inf(1) },
			[]string{`column "bwd_time_s", row 7 (stage 3, rep 1)`, "infinite"}},
		{"negative in_bytes", func(p *profilearrow.Profile) { p.Rows[3].InBytes = -1 },
			[]string{`column "in_bytes", row 3`, "negative size -1"}},
		{"negative param_bytes", func(p *profilearrow.Profile) { p.Rows[5].ParamBytes = -8 },
			[]string{`column "param_bytes", row 5`, "negative size -8"}},
		{"negative bwd_tmp_bytes", func(p *profilearrow.Profile) { p.Rows[6].BwdTmpBytes = valid(-2) },
			[]string{`column "bwd_tmp_bytes", row 6`, "negative"}},
		{"saved below out", func(p *profilearrow.Profile) { p.Rows[2].SavedBytes = valid(p.Rows[2].OutBytes - 1) },
			[]string{`column "saved_bytes", row 2`, "smaller than out_bytes"}},
		{"saved below out, stage 3 of 4", func(p *profilearrow.Profile) { p.Rows[8].SavedBytes = valid(p.Rows[8].OutBytes - 1) },
			[]string{`column "saved_bytes", row 8`, "smaller than out_bytes"}},
		{"unknown kind", func(p *profilearrow.Profile) { p.Rows[1].StageKind = "block" },
			[]string{`column "stage_kind", row 1`, `"block"`}},
		{"stage index 0", func(p *profilearrow.Profile) { p.Rows[0].StageIndex = 0 },
			[]string{`column "stage_index", row 0`, "out of range"}},
		{"negative rep", func(p *profilearrow.Profile) { p.Rows[0].Rep = -1 },
			[]string{`column "rep", row 0`, "out of range"}},
		{"repetition twice", func(p *profilearrow.Profile) { p.Rows[1].Rep = 0 },
			[]string{`column "rep", row 1 (stage 1, rep 0)`, "appears twice"}},
		{"name changes", func(p *profilearrow.Profile) { p.Rows[2].StageName = "other" },
			[]string{`column "stage_name", row 2`, `"other"`, `"layers.0"`}},
		{"gap in stages", func(p *profilearrow.Profile) { p.Rows = append(p.Rows[:3], p.Rows[6:]...) },
			[]string{`column "stage_index"`, "missing: [2]"}},
		{"loss not last", func(p *profilearrow.Profile) {
			for i := 12; i < 15; i++ {
				p.Rows[i].StageIndex = 7
			}
		}, []string{`column "stage_index", row 14`, "the loss is stage 7, want 5"}},
		{"two losses", func(p *profilearrow.Profile) {
			for i := 9; i < 12; i++ {
				p.Rows[i].StageKind, p.Rows[i].OutBytes, p.Rows[i].SavedBytes = profile.KindLoss, 0, valid(0)
			}
		}, []string{`column "stage_index", row 12`, "a second loss stage"}},
		{"loss with output", func(p *profilearrow.Profile) { p.Rows[13].OutBytes = 4 },
			[]string{`column "out_bytes", row 13 (stage 5, rep 1)`, "want 0"}},
		{"loss with saved bytes", func(p *profilearrow.Profile) { p.Rows[14].SavedBytes = valid(64) },
			[]string{`column "saved_bytes", row 14`, "bwd_tmp_bytes"}},
		{"no rows", func(p *profilearrow.Profile) { p.Rows = nil }, []string{"no rows"}},
		{"only a loss", func(p *profilearrow.Profile) { p.Rows = p.Rows[12:] },
			[]string{`column "stage_kind"`, "no row of kind \"stage\""}},
		{"empty model name", func(p *profilearrow.Profile) { p.Meta.ModelName = " " },
			[]string{`metadata key "model_name"`, "empty"}},
		{"zero batch", func(p *profilearrow.Profile) { p.Meta.BatchSize = 0 },
			[]string{`metadata key "batch_size"`, "below the minimum 1"}},
		{"zero reps", func(p *profilearrow.Profile) { p.Meta.Reps = 0 },
			[]string{`metadata key "reps"`, "below the minimum 1"}},
		{"negative warm-up", func(p *profilearrow.Profile) { p.Meta.WarmupReps = -1 },
			[]string{`metadata key "warmup_reps"`}},
		{"negative shape", func(p *profilearrow.Profile) { p.Meta.InputShape = []int64{8, -3} },
			[]string{`metadata key "input_shape"`, "dimension 1"}},
		{"other format", func(p *profilearrow.Profile) { p.Meta.Format = "something/v1" },
			[]string{`metadata key "format"`, `format something/v1 is not supported (this chainplan reads chainplan.profile/v1)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := sampleProfile(4, 3, 1)
			tt.mutate(p)
			_, err := profilearrow.Read(mustEncode(t, p, profilearrow.WriteOptions{}))
			if !errors.Is(err, profilearrow.ErrInvalidProfile) {
				t.Fatalf("Read error %v, want ErrInvalidProfile", err)
			}
			for _, s := range tt.want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
		})
	}
}

func TestWriteReadRoundTrip(t *testing.T) {
	want := sampleProfile(20, 5, 2)
	want.Rows[7].SavedBytes = profile.NullInt64{} // nulls survive
	for _, opts := range []profilearrow.WriteOptions{
		{},
		{Compression: profilearrow.CompressionLZ4},
		{Compression: profilearrow.CompressionZSTD, BatchRows: 7},
		{Stream: true},
		{Stream: true, Compression: profilearrow.CompressionLZ4, BatchRows: 1},
		{Stream: true, Compression: profilearrow.CompressionZSTD},
	} {
		got, err := profilearrow.Read(mustEncode(t, want, opts))
		if err != nil {
			t.Fatalf("%+v: Read: %v", opts, err)
		}
		if !reflect.DeepEqual(got.Rows, want.Rows) {
			t.Fatalf("%+v: rows differ after a round trip", opts)
		}
		if !got.Meta.CreatedAt.Equal(want.Meta.CreatedAt) {
			t.Fatalf("%+v: CreatedAt=%v, want %v", opts, got.Meta.CreatedAt, want.Meta.CreatedAt)
		}
		g, w := got.Meta, want.Meta
		g.CreatedAt = w.CreatedAt
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("%+v: Meta=%+v, want %+v", opts, g, w)
		}
	}
}

func TestWriteUnknownCompression(t *testing.T) {
	var sb strings.Builder
	err := profilearrow.Write(&sb, sampleProfile(1, 1, 1), profilearrow.WriteOptions{Compression: "gzip"})
	if err == nil || !strings.Contains(err.Error(), `"gzip"`) {
		t.Fatalf("Write error %v, want one naming gzip", err)
	}
}

// The last stage (4 of 4) may keep less than its output: the loss consumes a_L.
func TestReadAcceptsLastStageKeepingLessThanOutput(t *testing.T) {
	p := sampleProfile(4, 3, 1)
	for i := 9; i < 12; i++ {
		p.Rows[i].SavedBytes = valid(0)
	}
	got, err := profilearrow.Read(mustEncode(t, p, profilearrow.WriteOptions{}))
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	c, err := got.Chain()
	if err != nil {
		t.Fatalf("Chain: %v", err)
	}
	if s := c.Stages[3].SavedBytes; s != 0 {
		t.Fatalf("last stage saved_bytes = %d, want 0", s)
	}
}

// TestReadTowers: a profile of towers (schema metadata "towers") must have as many stages
// as its towers, and the last stage of each tower may keep less than its output, as the
// last stage of a chain may (the joint loss consumes every tower output).
func TestReadTowers(t *testing.T) {
	p := sampleProfile(5, 2, 24)
	p.Meta.Extra = map[string]string{profile.KeyTowers: `{"lengths": [3, 2], "branches": [0, 1], "input_bytes": [64, 32]}`}
	for i := range p.Rows {
		if p.Rows[i].StageIndex == 3 {
			p.Rows[i].SavedBytes = valid(0) // tower 0's last stage
		}
	}
	got, err := profilearrow.Read(mustEncode(t, p, profilearrow.WriteOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	if tw, err := got.Meta.Towers(); err != nil || tw == nil || tw.Lengths[1] != 2 {
		t.Fatalf("towers %+v, %v", tw, err)
	}
	p.Meta.Extra[profile.KeyTowers] = `{"lengths": [3, 3], "branches": [0, 1], "input_bytes": [64, 32]}`
	if _, err := profilearrow.Read(mustEncode(t, p, profilearrow.WriteOptions{})); err == nil || !strings.Contains(err.Error(), "6 in all") {
		t.Fatalf("towers of 6 stages on 5: %v", err)
	}
	p.Meta.Extra[profile.KeyTowers] = `{"lengths": [5], "branches": [], "input_bytes": []}`
	var pe *profilearrow.Error
	if _, err := profilearrow.Read(mustEncode(t, p, profilearrow.WriteOptions{})); !errors.As(err, &pe) || pe.Key != profile.KeyTowers {
		t.Fatalf("towers without branches: %v", err)
	}
}
