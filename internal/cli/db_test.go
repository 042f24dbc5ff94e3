package cli

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chainplan/chainplan/internal/service"
	"github.com/chainplan/chainplan/profile"
	"github.com/chainplan/chainplan/profilearrow"
	"github.com/chainplan/chainplan/store"
)

// profilesDir holds the pyarrow-written profiles (testdata/profiles/README.md).
const profilesDir = "../../testdata/profiles"

// goodProfiles are the valid pyarrow files of profilesDir; all but record_mlp.arrow hold
// the same 6-stage resnet-mini profile.
var goodProfiles = []string{"resnet_file.arrow", "resnet_lz4.feather", "resnet_zstd.arrow", "resnet_stream.arrows",
	"resnet_narrow.arrow", "record_mlp.arrow"}

// testdataFile returns the path of a file of profilesDir.
func testdataFile(name string) string { return filepath.Join(profilesDir, name) }

// runDB runs the CLI on the database at db.
func runDB(t *testing.T, db string, args ...string) (int, string, string) {
	t.Helper()
	return run(t, append([]string{"--db", db}, args...)...)
}

// mustIngest ingests files into db and fails the test unless it succeeds.
func mustIngest(t *testing.T, db string, files ...string) {
	t.Helper()
	if code, out, errs := runDB(t, db, append([]string{"ingest"}, files...)...); code != 0 {
		t.Fatalf("ingest: exit %d\n%s%s", code, out, errs)
	}
}

// syntheticProfile returns a valid profile of a model with stages stages plus a loss and
// reps repetitions, its values drawn from a PCG seeded with seed.
func syntheticProfile(model string, stages, reps int, seed uint64) *profilearrow.Profile {
	rng := rand.New(rand.NewPCG(seed, 0xc11))
	p := &profilearrow.Profile{Meta: profile.Metadata{
		Format: profile.Format, ModelName: model, ModelSignature: fmt.Sprintf("sha256:%x", seed),
		TorchVersion: "2.6.0", Device: "cuda:0", DeviceName: "NVIDIA H100 80GB HBM3", DType: "bfloat16",
		BatchSize: 16, InputShape: []int64{16, 1024}, Threads: 8, TimingMethod: "cuda_event", WarmupReps: 2,
		Reps: int64(reps), CreatedAt: time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(seed) * time.Minute),
		Host: "gpu-1",
	}}
	valid := func(v int64) profile.NullInt64 { return profile.NullInt64{Int64: v, Valid: true} }
	in := int64(16 * 1024 * 2)
	for k := 1; k <= stages+1; k++ {
		kind, name := profile.KindStage, fmt.Sprintf("layers.%d", k-1)
		out := int64(1+rng.IntN(32)) << 15
		saved, params := out+int64(rng.IntN(4))<<15, int64(rng.IntN(1<<22))
		fwd, bwd := 1e-4*(1+rng.Float64()), 2e-4*(1+rng.Float64())
		if k == stages+1 {
			kind, name, out, saved, params = profile.KindLoss, "loss", 0, 0, 0
		}
		for r := range reps {
			p.Rows = append(p.Rows, profile.Row{StageIndex: k, StageName: name, StageKind: kind, Rep: r,
				Measures: profile.Measures{FwdTimeS: fwd * (0.95 + 0.1*rng.Float64()), BwdTimeS: bwd * (0.95 + 0.1*rng.Float64()),
					InBytes: in, OutBytes: out, SavedBytes: valid(saved), FwdTmpBytes: valid(4096), BwdTmpBytes: valid(8192),
					ParamBytes: params}})
		}
		in = out
	}
	return p
}

// writeProfile writes p (LZ4-compressed, as feather.write_feather does) into dir and
// returns its path.
func writeProfile(tb testing.TB, dir, name string, p *profilearrow.Profile) string {
	tb.Helper()
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if err := profilearrow.Write(f, p, profilearrow.WriteOptions{Compression: profilearrow.CompressionLZ4}); err != nil {
		tb.Fatal(err)
	}
	return path
}

func TestDBPathResolution(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	t.Setenv("HOME", home)
	file := testdataFile("resnet_file.arrow")
	tests := []struct {
		name string
		env  string // CHAINPLAN_DB
		flag string // --db
		want string // the file that must exist afterwards
	}{
		{"default", "", "", filepath.Join(home, ".chainplan", "chainplan.db")},
		{"environment", filepath.Join(dir, "env.db"), "", filepath.Join(dir, "env.db")},
		{"flag over environment", filepath.Join(dir, "env2.db"), filepath.Join(dir, "flag.db"), filepath.Join(dir, "flag.db")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(service.EnvDB, tt.env)
			args := []string{"ingest", file}
			if tt.flag != "" {
				args = append([]string{"--db", tt.flag}, args...)
			}
			if code, _, errs := run(t, args...); code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			if _, err := os.Stat(tt.want); err != nil {
				t.Fatalf("no database at %s: %v", tt.want, err)
			}
			if tt.flag != "" {
				if _, err := os.Stat(tt.env); err == nil {
					t.Fatalf("--db was given, but %s was created", tt.env)
				}
			}
		})
	}
}

func TestReadCommandsNeedADatabase(t *testing.T) {
	db := filepath.Join(t.TempDir(), "none.db")
	for _, args := range [][]string{{"profiles"}, {"show", "1"}, {"export", "1"}, {"sql", "SELECT 1"}} {
		code, _, errs := runDB(t, db, args...)
		if code != exitBadInput || !strings.Contains(errs, "no database at") {
			t.Errorf("%v: exit %d, %q; want exit 2 naming the missing database", args, code, errs)
		}
	}
	if _, err := os.Stat(db); err == nil {
		t.Fatalf("a read command created %s", db)
	}
}

func TestLoadRunChainMatchesProfile(t *testing.T) {
	// The chain rebuilt from the stored stages equals the chain of the file itself.
	db := filepath.Join(t.TempDir(), "c.db")
	mustIngest(t, db, testdataFile("resnet_zstd.arrow"))
	p, err := profilearrow.ReadFile(testdataFile("resnet_zstd.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := p.Chain()
	if err != nil {
		t.Fatal(err)
	}
	cmd := newRootCmd(&env{stdout: os.Stdout, stderr: os.Stderr})
	if err := cmd.ParseFlags([]string{"--db", db}); err != nil {
		t.Fatal(err)
	}
	cmd.SetContext(context.Background())
	s, err := openStore(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.RunChain(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	gb, _ := got.MarshalIndent()
	wb, _ := want.MarshalIndent()
	if string(gb) != string(wb) {
		t.Fatalf("chain from the store:\n%s\nwant:\n%s", gb, wb)
	}
}

// TestKeywordValueDSN: a libpq keyword/value DSN names a PostgreSQL store, not a file:
// nothing is created under its name and its password appears in no message; a name that
// is neither a DSN nor a path exits 2 (issue 33: `--db 'host=h ... password=PW ...'`
// printed "no database at .../host=h user=u password=PW dbname=x", and ingest created that
// file).
func TestKeywordValueDSN(t *testing.T) {
	profile, err := filepath.Abs(testdataFile("resnet_file.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	// Port 1 refuses connections at once: the store is named, then unreachable.
	const dsn = "host=127.0.0.1 port=1 user=ann password=PW dbname=lab connect_timeout=5"
	for _, args := range [][]string{{"--db", dsn, "profiles"}, {"--db", dsn, "ingest", profile}, {"profiles"}} {
		t.Setenv(service.EnvDB, dsn)
		code, out, errs := run(t, args...)
		if code == 0 || strings.Contains(out+errs, "PW") || !strings.Contains(errs, "host=127.0.0.1 port=1 user=ann dbname=lab") {
			t.Errorf("%v: exit %d, %q; want a failure naming the store without its password", args, code, out+errs)
		}
	}
	t.Setenv(service.EnvDB, "")
	for _, db := range []string{"my dir/a=1 password=PW", "host=127.0.0.1 password='PW"} {
		code, _, errs := run(t, "--db", db, "ingest", profile)
		if code != exitBadInput || strings.Contains(errs, "PW") {
			t.Errorf("--db %q: exit %d, %q; want exit 2 without the password", db, code, errs)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) > 0 {
		t.Errorf("a DSN was taken for a path: %s was created", entries[0].Name())
	}
	summary := copySummary(store.CopyStats{}, "lab.db", dsn)
	if strings.Contains(summary, "PW") || !strings.Contains(summary, "from lab.db to host=127.0.0.1 port=1 user=ann dbname=lab") {
		t.Errorf("migrate-store's summary: %s", summary)
	}
}
