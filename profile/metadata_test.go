package profile_test

import (
	"database/sql"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/profile"
)

func sampleMetadata() profile.Metadata {
	return profile.Metadata{
		Format: profile.Format, ModelName: "gpt-mini", ModelSignature: "sha256:00ff", TorchVersion: "2.6.0",
		Device: "cuda:0", DeviceName: "NVIDIA H100 80GB HBM3", DType: "bfloat16", BatchSize: 8,
		InputShape: []int64{8, 512}, Threads: 16, TimingMethod: "cuda_event", WarmupReps: 2, Reps: 5,
		CreatedAt: time.Date(2025, 6, 1, 12, 0, 0, 250_000_000, time.UTC), Host: "node-3",
		Extra: map[string]string{"pandas": "{}"},
	}
}

func TestMetadataRoundTrip(t *testing.T) {
	m := sampleMetadata()
	kv := m.Map()
	if got, want := kv[profile.KeyInputShape], "[8,512]"; got != want {
		t.Errorf("Map()[input_shape]=%q, want %q", got, want)
	}
	if got, want := kv[profile.KeyCreatedAt], "2025-06-01T12:00:00.25Z"; got != want {
		t.Errorf("Map()[created_at]=%q, want %q", got, want)
	}
	got, err := profile.ParseMetadata(kv)
	if err != nil {
		t.Fatalf("ParseMetadata(Map()): %v", err)
	}
	if !reflect.DeepEqual(got, m) {
		t.Fatalf("ParseMetadata(Map())=%+v\nwant %+v", got, m)
	}
}

func TestMetadataMapDefaults(t *testing.T) {
	var m profile.Metadata // a Go-built profile that left Format and InputShape out
	kv := m.Map()
	if kv[profile.KeyFormat] != profile.Format || kv[profile.KeyInputShape] != "[]" {
		t.Fatalf("Map() of the zero Metadata: format %q, input_shape %q; want %q, []", kv[profile.KeyFormat],
			kv[profile.KeyInputShape], profile.Format)
	}
	m.Extra = map[string]string{profile.KeyHost: "spoofed", "note": "kept"}
	if kv := m.Map(); kv[profile.KeyHost] != "" || kv["note"] != "kept" {
		t.Fatalf("Map() let Extra override a provenance key or dropped another: %v", kv)
	}
}

func TestSetExtra(t *testing.T) {
	m := sampleMetadata()
	kv := m.Map()
	m.SetExtra(kv)
	if want := map[string]string{"pandas": "{}"}; !reflect.DeepEqual(m.Extra, want) {
		t.Fatalf("SetExtra(Map()) Extra=%v, want %v", m.Extra, want)
	}
	delete(kv, "pandas")
	if m.SetExtra(kv); m.Extra != nil {
		t.Fatalf("SetExtra of provenance keys only: Extra=%v, want nil", m.Extra)
	}
}

func TestParseMetadataErrors(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(kv map[string]string)
		wantKey string // "" for a version error
		wantMsg string
	}{
		{"no format", func(kv map[string]string) { delete(kv, profile.KeyFormat) }, "format", "not a chainplan profile"},
		{"other format", func(kv map[string]string) { kv[profile.KeyFormat] = "feather/v2" }, "format", `format feather/v2 is not supported (this chainplan reads chainplan.profile/v1)`},
		{"newer version", func(kv map[string]string) { kv[profile.KeyFormat] = "chainplan.profile/v2" }, "", `format chainplan.profile/v2 is not supported (this chainplan reads chainplan.profile/v1)`},
		{"missing keys", func(kv map[string]string) { delete(kv, profile.KeyHost); delete(kv, profile.KeyReps) }, "reps",
			"missing keys: reps, host"},
		{"empty model", func(kv map[string]string) { kv[profile.KeyModelName] = " " }, "model_name", "empty"},
		{"zero batch", func(kv map[string]string) { kv[profile.KeyBatchSize] = "0" }, "batch_size", "below the minimum 1"},
		{"text reps", func(kv map[string]string) { kv[profile.KeyReps] = "five" }, "reps", `"five" is not an integer`},
		{"negative dimension", func(kv map[string]string) { kv[profile.KeyInputShape] = "[8, -1]" }, "input_shape", "dimension 1 is -1"},
		{"bad time", func(kv map[string]string) { kv[profile.KeyCreatedAt] = "June 1st" }, "created_at", "not an RFC 3339 time"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := sampleMetadata()
			kv := m.Map()
			tt.edit(kv)
			_, err := profile.ParseMetadata(kv)
			if err == nil || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("ParseMetadata error %v, want one saying %q", err, tt.wantMsg)
			}
			me, ok := errors.AsType[*profile.MetadataError](err)
			if tt.wantKey == "" {
				if ok || !errors.Is(err, chainplan.ErrSchemaVersion) {
					t.Fatalf("ParseMetadata error %v, want one wrapping ErrSchemaVersion", err)
				}
				return
			}
			if !ok || me.Key != tt.wantKey {
				t.Fatalf("ParseMetadata error %v, want a *MetadataError on key %q", err, tt.wantKey)
			}
		})
	}
}

// NullInt64 goes into and out of SQL as database/sql.NullInt64 does.
func TestNullInt64SQL(t *testing.T) {
	for _, v := range []profile.NullInt64{{}, {Int64: 42, Valid: true}, {Int64: 0, Valid: true}} {
		got, err := v.Value()
		want, _ := sql.NullInt64(v).Value()
		if err != nil || got != want {
			t.Errorf("%+v.Value()=%v, %v; want %v", v, got, err, want)
		}
		var back profile.NullInt64
		if err := back.Scan(got); err != nil || back != v {
			t.Errorf("Scan(%v) = %+v, %v; want %+v", got, back, err, v)
		}
	}
	var n profile.NullInt64
	if err := n.Scan("12x"); err == nil {
		t.Errorf("Scan(\"12x\") = %+v, want an error", n)
	}
}
