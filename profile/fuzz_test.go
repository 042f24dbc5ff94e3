package profile_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/profile"
)

// FuzzParseFields: the text fields of a profile (the metadata's key-values, the towers,
// a stage's parallel fields and its operation options) never panic the parsers; what
// they accept is within their documented ranges and, written back, reads as the same.
// The first byte picks the parser.
func FuzzParseFields(f *testing.F) {
	seeds := map[byte][]string{
		0: {"[32, 3, 224, 224]", "[]", "[1.5]", "[-1]", "[1e300]"},
		1: {`[{"name": "c", "type": "Conv2d", "in_shape": [8, 3, 32, 32], "out_shape": [8, 16, 32, 32], ` +
			`"in_channels": 3, "out_channels": 16, "kernel": [3, 3], "stride": [1, 1], "padding": [1, 1], ` +
			`"weight_count": 432, "bias_count": 16}]`, `[{"type": ""}]`, `[]`},
		2: {`{"batch_sizes": [8, 16], "fwd_time_s": [0.1, 0.2], "bwd_time_s": [0.2, 0.4]}`,
			`{"batch_sizes": [8, 8], "fwd_time_s": [0.1, 0.2], "bwd_time_s": [0.2, 0.4]}`},
		3: {`{"lengths": [3, 2], "branches": [0, 1, 1], "input_bytes": [10, 20, 20]}`, `{"branches": []}`},
		4: {`[{"name": "fused", "saved_bytes": 10, "recompute_time": 0.001}]`, `[{}]`, `3`},
		5: {"format=chainplan.profile/v1\nmodel_name=m\nmodel_signature=s\ntorch_version=2.6.0\ndevice=cpu\n" +
			"device_name=x\ndtype=float32\nbatch_size=8\ninput_shape=[8, 3]\nthreads=1\ntiming_method=t\n" +
			"warmup_reps=0\nreps=3\ncreated_at=2025-01-01T00:00:00Z\nhost=h\nnote=extra"},
	}
	for kind, ss := range seeds {
		for _, s := range ss {
			f.Add(kind, s)
		}
	}
	f.Fuzz(func(t *testing.T, kind byte, s string) {
		switch kind % 6 {
		case 0:
			shape, err := profile.ParseShape(s)
			if err != nil {
				return
			}
			if slices.ContainsFunc(shape, func(d int64) bool { return d < 0 }) {
				t.Fatalf("ParseShape(%q) = %v: a negative dimension", s, shape)
			}
			if back, err := profile.ParseShape(profile.FormatShape(shape)); err != nil || !slices.Equal(back, shape) {
				t.Fatalf("ParseShape(%q) = %v reads back as %v, %v", s, shape, back, err)
			}
		case 1:
			ms, err := profile.ParseModules(s)
			if err != nil {
				return
			}
			for _, m := range ms {
				if strings.TrimSpace(m.Type) == "" || len(m.OutShape) == 0 || m.WeightCount < 0 {
					t.Fatalf("ParseModules(%q) accepted %+v", s, m)
				}
			}
			if back, err := profile.ParseModules(profile.FormatModules(ms)); err != nil || !reflect.DeepEqual(back, ms) {
				t.Fatalf("ParseModules(%q) = %+v reads back as %+v, %v", s, ms, back, err)
			}
		case 2:
			ts, err := profile.ParseBatchTimes(s)
			if err != nil {
				return
			}
			for i, bt := range ts {
				if bt.Batch < 1 || bt.FwdTimeS < 0 || bt.BwdTimeS < 0 || i > 0 && ts[i-1].Batch >= bt.Batch {
					t.Fatalf("ParseBatchTimes(%q) = %+v: out of range or out of order", s, ts)
				}
			}
			if back, err := profile.ParseBatchTimes(profile.FormatBatchTimes(ts)); err != nil || !slices.Equal(back, ts) {
				t.Fatalf("ParseBatchTimes(%q) = %+v reads back as %+v, %v", s, ts, back, err)
			}
		case 3:
			tw, err := profile.ParseTowers(s)
			if err != nil {
				return
			}
			for j, b := range tw.Branches {
				if b < 0 || b >= len(tw.Lengths) || tw.InputBytes[j] < 0 {
					t.Fatalf("ParseTowers(%q) = %+v: branch %d out of range", s, tw, j)
				}
			}
		case 4:
			opts, err := profile.ParseOptions(1, s)
			if err != nil {
				return
			}
			if err := chainplan.ValidateOptions(1, &chainplan.Stage{Options: opts}); err != nil {
				t.Fatalf("ParseOptions(%q) accepted options that do not validate: %v", s, err)
			}
		default:
			kv := map[string]string{}
			for _, line := range strings.Split(s, "\n") {
				k, v, _ := strings.Cut(line, "=")
				kv[k] = v
			}
			m, err := profile.ParseMetadata(kv)
			if err != nil {
				return
			}
			if m.ModelName == "" || m.BatchSize < 1 || m.Reps < 1 {
				t.Fatalf("ParseMetadata(%q) accepted %+v", s, m)
			}
			if back, err := profile.ParseMetadata(m.Map()); err != nil || !reflect.DeepEqual(back, m) {
				t.Fatalf("ParseMetadata(%q) = %+v reads back as %+v, %v", s, m, back, err)
			}
		}
	})
}
