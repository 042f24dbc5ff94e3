package profilearrow_test

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/profile"
	"github.com/chainplan/chainplan/profilearrow"
)

// testdata is the folder of the files testdata/profiles/generate.py writes with pyarrow.
const testdata = "../testdata/profiles"

// The pyarrow files hold one table (testdata/profiles/generate.py, resnet_columns): 6 stages
// plus the loss, 5 repetitions each.
const resnetRows = 35

func TestReadPyarrowFiles(t *testing.T) {
	want, err := chainplan.ReadChain(filepath.Join(testdata, "resnet.chain.json"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		file  string
		extra map[string]string
	}{
		{file: "resnet_file.arrow"},
		{file: "resnet_lz4.feather"},
		{file: "resnet_zstd.arrow"},
		{file: "resnet_stream.arrows"},
		{file: "resnet_narrow.arrow", extra: map[string]string{"writer": "generate.py"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			p, err := profilearrow.ReadFile(filepath.Join(testdata, tt.file))
			if err != nil {
				t.Fatalf("ReadFile: %v", err)
			}
			if got := len(p.Rows); got != resnetRows {
				t.Fatalf("len(Rows)=%d, want %d", got, resnetRows)
			}
			m := p.Meta
			if m.Format != profile.Format || m.ModelName != "resnet-mini" || m.Device != "cpu" || m.DType != "float32" ||
				m.BatchSize != 8 || m.Threads != 2 || m.WarmupReps != 2 || m.Reps != 5 || m.TimingMethod != "perf_counter" ||
				m.Host != "testhost" || m.TorchVersion != "2.15.0+cpu" || m.DeviceName != "Synthetic CPU" {
				t.Fatalf("Meta=%+v", m)
			}
			if !strings.HasPrefix(m.ModelSignature, "sha256:") {
				t.Fatalf("ModelSignature=%q", m.ModelSignature)
			}
			if got, want := m.CreatedAt, time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC); !got.Equal(want) {
				t.Fatalf("CreatedAt=%v, want %v", got, want)
			}
			if got := m.InputShape; len(got) != 4 || got[0] != 8 || got[3] != 64 {
				t.Fatalf("InputShape=%v", got)
			}
			if len(m.Extra) != len(tt.extra) || m.Extra["writer"] != tt.extra["writer"] {
				t.Fatalf("Extra=%v, want %v", m.Extra, tt.extra)
			}
			got, err := p.Chain()
			if err != nil {
				t.Fatalf("Chain: %v", err)
			}
			assertChainEqual(t, got, want)
		})
	}
}

// assertChainEqual compares chains, times to 1e-12 relative (Go and numpy may round the
// mean of two middle values differently), sizes exactly.
func assertChainEqual(t *testing.T, got, want *chainplan.Chain) {
	t.Helper()
	close := func(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(math.Abs(a), math.Abs(b)) }
	if got.InputBytes != want.InputBytes || len(got.Stages) != len(want.Stages) {
		t.Fatalf("chain: input_bytes %d, %d stages; want %d, %d", got.InputBytes, len(got.Stages), want.InputBytes, len(want.Stages))
	}
	for i, g := range got.Stages {
		w := want.Stages[i]
		if !close(g.FwdTime, w.FwdTime) || !close(g.BwdTime, w.BwdTime) {
			t.Fatalf("stage %d times = %g, %g; want %g, %g", i+1, g.FwdTime, g.BwdTime, w.FwdTime, w.BwdTime)
		}
		g.FwdTime, g.BwdTime = w.FwdTime, w.BwdTime
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("stage %d = %+v, want %+v", i+1, g, w)
		}
	}
	if !close(got.Loss.FwdTime, want.Loss.FwdTime) || !close(got.Loss.BwdTime, want.Loss.BwdTime) ||
		got.Loss.FwdTmpBytes != want.Loss.FwdTmpBytes || got.Loss.BwdTmpBytes != want.Loss.BwdTmpBytes {
		t.Fatalf("loss = %+v, want %+v", got.Loss, want.Loss)
	}
}

func TestReadRecordStyle(t *testing.T) {
	// record_mlp.arrow: what chainplan.record writes, per-step times and output sizes
	// without saved or temporary sizes, no loss row (generate.py).
	p, err := profilearrow.ReadFile(filepath.Join(testdata, "record_mlp.arrow"))
	if err != nil {
		t.Fatalf("ReadFile: %v", err)
	}
	stages := p.Stages()
	if got, want := len(stages), 3; got != want {
		t.Fatalf("len(Stages())=%d, want %d", got, want)
	}
	for _, s := range stages {
		if s.Reps != 7 || s.SavedBytes.Valid || s.FwdTmpBytes.Valid || s.BwdTmpBytes.Valid || s.Kind != profile.KindStage {
			t.Fatalf("stage %+v: want 7 reps, null memory", s)
		}
	}
	_, err = p.Chain()
	var ce *chainplan.ChainError
	if !errors.As(err, &ce) || ce.Stage != 1 || ce.Field != "saved_bytes" {
		t.Fatalf("Chain() error = %v, want a ChainError on stage 1 saved_bytes", err)
	}
}

func TestReadBadPyarrowFiles(t *testing.T) {
	tests := []struct {
		file    string
		wantErr error
		want    []string // substrings of the message
	}{
		{"bad_version.arrow", chainplan.ErrSchemaVersion, []string{"chainplan.profile/v2", "chainplan.profile/v1"}},
		{"bad_no_metadata.arrow", profilearrow.ErrInvalidProfile, []string{`metadata key "format"`, "not a chainplan profile"}},
		{"bad_type.arrow", profilearrow.ErrInvalidProfile, []string{`column "fwd_time_s"`, "has type utf8", "want float64"}},
		{"bad_missing_column.arrow", profilearrow.ErrInvalidProfile, []string{`column "bwd_time_s"`, "missing"}},
		{"bad_negative.arrow", profilearrow.ErrInvalidProfile, []string{`column "out_bytes", row 12 (stage 3, rep 2)`, "negative size -4096"}},
		{"bad_nan.arrow", profilearrow.ErrInvalidProfile, []string{`column "bwd_time_s", row 9 (stage 2, rep 4)`, "NaN"}},
		{"bad_truncated.arrow", profilearrow.ErrInvalidProfile, []string{"truncated"}},
		{"bad_corrupt_footer.arrow", profilearrow.ErrInvalidProfile, []string{"corrupt Arrow IPC file", "malformed flatbuffer"}},
		// Arrow has no checksums: flipped value bytes are caught when a value turns invalid.
		{"bad_corrupt_values.arrow", profilearrow.ErrInvalidProfile, []string{`column "fwd_time_s", row 20 (stage 5, rep 0)`, "negative time"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			p, err := profilearrow.ReadFile(filepath.Join(testdata, tt.file))
			if err == nil {
				t.Fatalf("ReadFile succeeded with %d rows, want an error", len(p.Rows))
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("ReadFile error %v, want errors.Is %v", err, tt.wantErr)
			}
			path := filepath.Join(testdata, tt.file)
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name the file", err)
			}
			msg := strings.ReplaceAll(err.Error(), path, "FILE")
			for _, s := range tt.want {
				if !strings.Contains(msg, s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
		})
	}
}

func TestReadMissingFile(t *testing.T) {
	_, err := profilearrow.ReadFile(filepath.Join(t.TempDir(), "nope.arrow"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("ReadFile error %v, want os.ErrNotExist", err)
	}
}

// TestReadTruncations cuts a good file and a good stream at many lengths: every prefix is
// rejected, none panics, none reads as a shorter profile.
func TestReadTruncations(t *testing.T) {
	for _, file := range []string{"resnet_file.arrow", "resnet_stream.arrows", "resnet_lz4.feather"} {
		data, err := os.ReadFile(filepath.Join(testdata, file))
		if err != nil {
			t.Fatal(err)
		}
		step := 1
		if testing.Short() {
			step = 7
		}
		for n := 0; n < len(data); n += step {
			if _, err := profilearrow.Read(data[:n]); !errors.Is(err, profilearrow.ErrInvalidProfile) {
				t.Fatalf("%s cut at %d of %d bytes: error %v, want ErrInvalidProfile", file, n, len(data), err)
			}
		}
	}
}

// TestReadBitFlips flips bytes one at a time: the reader either rejects the file with
// ErrInvalidProfile (or ErrSchemaVersion) or returns a profile that passes its checks;
// it never panics.
func TestReadBitFlips(t *testing.T) {
	for _, file := range []string{"resnet_file.arrow", "resnet_zstd.arrow", "resnet_stream.arrows"} {
		data, err := os.ReadFile(filepath.Join(testdata, file))
		if err != nil {
			t.Fatal(err)
		}
		step := 1
		if testing.Short() {
			step = 5
		}
		buf := make([]byte, len(data))
		for i := 0; i < len(data); i += step {
			copy(buf, data)
			buf[i] ^= 0x5a
			p, err := profilearrow.Read(buf)
			if err != nil {
				if !errors.Is(err, profilearrow.ErrInvalidProfile) && !errors.Is(err, chainplan.ErrSchemaVersion) {
					t.Fatalf("%s byte %d flipped: error %v is neither ErrInvalidProfile nor ErrSchemaVersion", file, i, err)
				}
				continue
			}
			if len(p.Rows) == 0 {
				t.Fatalf("%s byte %d flipped: a profile with no rows", file, i)
			}
		}
	}
}
