package store_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chainplan/chainplan/internal/pgtest"
	"github.com/chainplan/chainplan/profile"
	"github.com/chainplan/chainplan/store"
)

// The store's tests form a conformance suite: each runs on every backend, as a subtest
// named after it (TestIngestRoundTrip/sqlite, TestIngestRoundTrip/postgres). PostgreSQL
// is a private server (internal/pgtest) started on first use, or the one $CHAINPLAN_TEST_PG
// names; each test gets an empty schema of its own.
var backendsFlag = flag.String("store-backends", "sqlite,postgres", "comma-separated backends the store's tests run on")

// testBackend is one backend of the suite.
type testBackend struct {
	name string
	// target returns the path or DSN of a new, empty database, removed when the test ends.
	target func(tb testing.TB) string
}

var allBackends = []testBackend{
	{"sqlite", func(tb testing.TB) string { return filepath.Join(tb.TempDir(), "chainplan.db") }},
	{"postgres", pgtest.NewStore},
}

func (b testBackend) postgres() bool { return b.name == "postgres" }

// open opens a new, empty database of the backend, closed when the test ends.
func (b testBackend) open(tb testing.TB) *store.DB {
	tb.Helper()
	return mustOpen(tb, b.target(tb))
}

// eachBackend runs test once per backend (-store-backends), as a subtest named after it.
func eachBackend(t *testing.T, test func(t *testing.T, b testBackend)) {
	t.Helper()
	for _, b := range selectedBackends() {
		t.Run(b.name, func(t *testing.T) { test(t, b) })
	}
}

// selectedBackends returns the backends -store-backends names.
func selectedBackends() []testBackend {
	names := strings.Split(*backendsFlag, ",")
	var out []testBackend
	for _, b := range allBackends {
		if slices.Contains(names, b.name) {
			out = append(out, b)
		}
	}
	return out
}

// mustOpen opens (creating) a database at path and closes it when the test ends.
func mustOpen(tb testing.TB, path string) *store.DB {
	tb.Helper()
	db, err := store.Open(context.Background(), path, store.Options{})
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// model describes the stage names of a synthetic model.
type model struct {
	name   string
	stages []string
}

// models are the synthetic models of test histories. docs/sql.md's examples name them.
var models = []model{
	{"resnet50", []string{"conv1", "layer1", "layer2", "layer3", "layer4", "fc"}},
	{"gpt2-small", append(append([]string{"embed"}, seq("h.", 12)...), "ln_f", "lm_head")},
	{"vit-b16", append(append([]string{"patch_embed"}, seq("blocks.", 12)...), "head")},
}

func seq(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}

var (
	torchVersions = []string{"2.3.1", "2.4.0", "2.5.1", "2.6.0"}
	devices       = []struct{ device, name string }{
		{"cuda:0", "NVIDIA H100 80GB HBM3"}, {"cuda:0", "NVIDIA A100-SXM4-40GB"}, {"cpu", "AMD EPYC 7763"},
	}
)

// sampleProfile returns profile number i of a synthetic history: its model, device and
// torch version cycle with i, its values come from a PCG seeded with i, its content hash
// is unique to i, and it has reps repetitions per stage (and stages stages when positive,
// instead of the model's own).
func sampleProfile(i, stages, reps int) *store.Profile {
	rng := rand.New(rand.NewPCG(uint64(i), 0xc4a1))
	m := models[i%len(models)]
	names := m.stages
	if stages > 0 {
		names = seq("layers.", stages)
	}
	dev := devices[(i/len(models))%len(devices)]
	sum := sha256.Sum256(fmt.Appendf(nil, "profile %d %d %d", i, stages, reps))
	batch := int64(8 << (i % 3))
	p := &store.Profile{Run: store.Run{
		SHA256: hex.EncodeToString(sum[:]), SourcePath: fmt.Sprintf("/data/profiles/%s-%05d.arrow", m.name, i),
		FileBytes: int64(4096 + 96*len(names)*reps), Metadata: profile.Metadata{Format: profile.Format,
			ModelName: m.name, ModelSignature: fmt.Sprintf("sha256:%s-v%d", m.name, i/50), TorchVersion: torchVersions[(i/7)%len(torchVersions)],
			Device: dev.device, DeviceName: dev.name, DType: []string{"float32", "bfloat16"}[(i/5)%2],
			BatchSize: batch, InputShape: []int64{batch, 3, 224, 224}, Threads: 16, TimingMethod: "cuda_event",
			WarmupReps: 3, Reps: int64(reps), CreatedAt: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * 17 * time.Minute),
			Host: fmt.Sprintf("node-%d", i%5), Extra: map[string]string{"note": fmt.Sprintf("synthetic %d", i)}},
	}}
	in := batch * 3 * 224 * 224 * 4
	for k, name := range names {
		out := int64(1+rng.IntN(256)) << 16
		s := profile.StageSummary{Index: k + 1, Name: name, Kind: profile.KindStage, Reps: reps, Measures: profile.Measures{
			FwdTimeS: 1e-4 + rng.Float64()*2e-3, BwdTimeS: 2e-4 + rng.Float64()*4e-3, InBytes: in, OutBytes: out,
			SavedBytes: nullInt(out * int64(1+rng.IntN(3))), FwdTmpBytes: nullInt(int64(rng.IntN(16)) << 16),
			BwdTmpBytes: nullInt(int64(rng.IntN(16)) << 18), ParamBytes: int64(rng.IntN(1 << 24))}}
		p.Stages = append(p.Stages, s)
		in = out
	}
	p.Stages = append(p.Stages, profile.StageSummary{Index: len(names) + 1, Name: "cross_entropy", Kind: profile.KindLoss, Reps: reps,
		Measures: profile.Measures{FwdTimeS: 5e-5, BwdTimeS: 4e-5, InBytes: in,
			SavedBytes: nullInt(0), FwdTmpBytes: nullInt(0), BwdTmpBytes: nullInt(4096)}})
	for _, s := range p.Stages {
		for r := range reps {
			m := s.Measures
			m.FwdTimeS *= 0.9 + 0.2*rng.Float64()
			m.BwdTimeS *= 0.9 + 0.2*rng.Float64()
			p.Measurements = append(p.Measurements, profile.Row{StageIndex: s.Index, StageName: s.Name, StageKind: s.Kind,
				Rep: r, Measures: m})
		}
	}
	return p
}

func nullInt(v int64) profile.NullInt64 { return profile.NullInt64{Int64: v, Valid: true} }

// mustIngest stores p in db and fails the test unless it succeeds.
func mustIngest(tb testing.TB, db *store.DB, p *store.Profile) store.IngestResult {
	tb.Helper()
	res, err := db.Ingest(context.Background(), p)
	if err != nil {
		tb.Fatal(err)
	}
	return res
}

// count returns the result of a one-value query.
func count(tb testing.TB, db *store.DB, query string, args ...any) int64 {
	tb.Helper()
	rows, err := db.Query(context.Background(), query, args...)
	if err != nil {
		tb.Fatalf("Query(%q): %v", query, err)
	}
	defer rows.Close()
	if !rows.Next() {
		tb.Fatalf("Query(%q): no row (%v)", query, rows.Err())
	}
	v, ok := rows.Values()[0].(int64)
	if !ok {
		tb.Fatalf("Query(%q) = %#v, want an integer", query, rows.Values()[0])
	}
	return v
}
