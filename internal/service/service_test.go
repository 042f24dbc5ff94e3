package service_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/service"
	"github.com/chainplan/chainplan/planner"
	"github.com/chainplan/chainplan/profilearrow"
)

const profilesDir = "../../testdata/profiles"

// newService opens a new database in the test's folder with one run: resnet_file.arrow.
func newService(t *testing.T) *service.Service {
	t.Helper()
	s, err := service.Open(context.Background(), filepath.Join(t.TempDir(), "chainplan.db"),
		service.Options{Create: true, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, _, err := s.Ingest(context.Background(), filepath.Join(profilesDir, "resnet_file.arrow")); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestDBPath(t *testing.T) {
	tests := []struct{ flag, env, home, want string }{
		{"/f.db", "/e.db", "/home/u", "/f.db"},
		{"", "/e.db", "/home/u", "/e.db"},
		{"", "", "/home/u", "/home/u/.chainplan/chainplan.db"},
		{"/f.db", "", "", "/f.db"},
	}
	for _, tt := range tests {
		if got, err := service.DBPath(tt.flag, tt.env, tt.home); err != nil || got != tt.want {
			t.Errorf("DBPath(%q, %q, %q) = %q, %v; want %q", tt.flag, tt.env, tt.home, got, err, tt.want)
		}
	}
	if _, err := service.DBPath("", "", ""); !errors.Is(err, service.ErrBadInput) || !strings.Contains(err.Error(), service.EnvDB) {
		t.Errorf("no home: %v, want ErrBadInput naming %s", err, service.EnvDB)
	}
	dir := t.TempDir()
	t.Setenv(service.EnvDB, filepath.Join(dir, "env.db"))
	if got, err := service.DefaultDBPath(); err != nil || got != filepath.Join(dir, "env.db") {
		t.Errorf("DefaultDBPath() = %q, %v", got, err)
	}
	// Open with no path takes the default; a read-only open of a missing file creates nothing.
	if _, err := service.Open(context.Background(), "", service.Options{}); !errors.Is(err, chainplan.ErrNotFound) {
		t.Errorf("Open of a missing default database: %v, want ErrNotFound", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "env.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a read-only Open created the database: %v", err)
	}
}

func TestRunRefs(t *testing.T) {
	s := newService(t)
	ctx := context.Background()
	for _, arg := range []string{"latest", "1", "+1", "001"} {
		ref, err := service.ParseRunRef(arg)
		if err != nil {
			t.Fatalf("ParseRunRef(%q): %v", arg, err)
		}
		if id, err := s.ResolveRun(ctx, ref); err != nil || id != 1 {
			t.Errorf("ResolveRun(%q) = %d, %v; want run 1", arg, id, err)
		}
	}
	for _, arg := range []string{"", "0", "-3", "last", "1.0"} {
		if _, err := service.ParseRunRef(arg); !errors.Is(err, service.ErrBadInput) || !strings.Contains(err.Error(), "RUN must be") {
			t.Errorf("ParseRunRef(%q): %v, want ErrBadInput", arg, err)
		}
	}
	for _, ref := range []service.RunRef{service.RunID(2), service.RunID(0), service.RunID(-1)} {
		if _, err := s.ResolveRun(ctx, ref); !errors.Is(err, chainplan.ErrNotFound) {
			t.Errorf("ResolveRun(%v): %v, want ErrNotFound", ref, err)
		}
	}
	r, err := s.Run(ctx, service.LatestRun)
	if err != nil || r.ModelName != "resnet-mini" || r.Device == "" || len(r.InputShape) == 0 {
		t.Fatalf("Run(latest) = %+v, %v", r, err)
	}
	empty, err := service.Open(ctx, filepath.Join(t.TempDir(), "empty.db"), service.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer empty.Close()
	if _, err := empty.ResolveRun(ctx, service.LatestRun); !errors.Is(err, chainplan.ErrNotFound) {
		t.Errorf("latest of an empty database: %v, want ErrNotFound", err)
	}
}

// Ingest → resolve → plan at the smallest budget → record: the plan is the planner's own
// at MinBudget's budget, and the stored parameters say what was asked and what was used.
func TestPlanRunMin(t *testing.T) {
	s := newService(t)
	ctx := context.Background()
	req := service.Request{Request: planner.Request{Algo: "rotor", Slots: 200}, Min: true, Source: service.SourceCLI}
	got, err := s.PlanRun(ctx, service.LatestRun, req)
	if err != nil {
		t.Fatal(err)
	}
	prof, err := profilearrow.ReadFile(filepath.Join(profilesDir, "resnet_file.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := prof.Chain()
	if err != nil {
		t.Fatal(err)
	}
	min, err := planner.MinBudget(c, req.Request)
	if err != nil {
		t.Fatal(err)
	}
	want, err := planner.Solve(c, planner.Request{Algo: "rotor", Slots: 200, BudgetBytes: min})
	if err != nil {
		t.Fatal(err)
	}
	got.Plan.SolveMS, want.SolveMS = 0, 0
	if got.RunID != 1 || got.PlanID != 1 || !reflect.DeepEqual(got.Plan, want) {
		t.Fatalf("PlanRun = run %d plan %d %+v\nwant the plan at MinBudget's %d: %+v", got.RunID, got.PlanID, got.Plan, min, want)
	}
	sp, err := s.Store().Plan(ctx, got.PlanID)
	if err != nil {
		t.Fatal(err)
	}
	var stored map[string]any
	if err := json.Unmarshal(sp.Params, &stored); err != nil {
		t.Fatal(err)
	}
	wantStored := map[string]any{"algo": "rotor", "budget": "min", "budget_bytes": float64(min), "slots": float64(200),
		"segments": float64(0), "chosen_segments": float64(0), "bandwidth_bytes_per_s": float64(0), "source": "cli"}
	if !reflect.DeepEqual(stored, wantStored) || sp.Version != "test" {
		t.Fatalf("stored params %s (version %q), want %v", sp.Params, sp.Version, wantStored)
	}
	prm, err := service.ParamsOf(sp.Params, &sp.Plan)
	if err != nil || !reflect.DeepEqual(prm, service.ParamsFor(req, got.Plan)) {
		t.Fatalf("ParamsOf = %+v, %v; want %+v", prm, err, service.ParamsFor(req, got.Plan))
	}
}

// The parameters do not depend on the front end: two requests that differ in their
// source alone store the same object but for "source".
func TestParamsSameForEverySource(t *testing.T) {
	s := newService(t)
	ctx := context.Background()
	var params []map[string]any
	for _, src := range []string{service.SourceCLI, service.SourcePython, service.SourceCheckpointed} {
		req := service.Request{Request: planner.Request{Algo: "sequential", BudgetBytes: 1 << 40}, Source: src}
		got, err := s.PlanRun(ctx, service.RunID(1), req)
		if err != nil {
			t.Fatal(err)
		}
		sp, err := s.Store().Plan(ctx, got.PlanID)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(sp.Params, &m); err != nil {
			t.Fatal(err)
		}
		if m["source"] != src || m["budget"] != float64(1<<40) || m["chosen_segments"] != float64(got.Plan.Segments) {
			t.Fatalf("params %s", sp.Params)
		}
		delete(m, "source")
		params = append(params, m)
	}
	if !reflect.DeepEqual(params[0], params[1]) || !reflect.DeepEqual(params[0], params[2]) {
		t.Fatalf("params differ between sources: %v", params)
	}
}

func TestPlanRunFailuresRecordNothing(t *testing.T) {
	s := newService(t)
	ctx := context.Background()
	tests := []struct {
		name string
		ref  service.RunRef
		req  service.Request
		is   error
	}{
		{"infeasible", service.RunID(1), service.Request{Request: planner.Request{BudgetBytes: 1}, Source: "python"}, chainplan.ErrInfeasible},
		{"no run", service.RunID(7), service.Request{Min: true, Source: "python"}, chainplan.ErrNotFound},
		{"bad source", service.RunID(1), service.Request{Min: true, Source: "jupyter"}, service.ErrBadInput},
		{"no source", service.RunID(1), service.Request{Min: true}, service.ErrBadInput},
		{"unknown algorithm", service.RunID(1), service.Request{Request: planner.Request{Algo: "magic"}, Min: true, Source: "cli"},
			chainplan.ErrUnsupported},
	}
	for _, tt := range tests {
		if _, err := s.PlanRun(ctx, tt.ref, tt.req); !errors.Is(err, tt.is) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.is)
		}
	}
	if plans, err := s.Store().Plans(ctx, 1); err != nil || len(plans) != 0 {
		t.Fatalf("%d plans recorded by failed requests (%v)", len(plans), err)
	}
}

func TestRecordExecution(t *testing.T) {
	s := newService(t)
	ctx := context.Background()
	got, err := s.PlanRun(ctx, service.RunID(1), service.Request{Min: true, Source: service.SourcePython})
	if err != nil {
		t.Fatal(err)
	}
	id, err := s.RecordExecution(ctx, got.PlanID, service.Execution{StepTimeS: 0.25, PeakBytes: got.Plan.PeakBytes - 1,
		Device: "cpu", TorchVersion: "2.6.0", Metadata: map[string]string{"note": "x"}})
	if err != nil || id != 1 {
		t.Fatalf("RecordExecution = %d, %v", id, err)
	}
	rows, err := s.Store().Query(ctx, "SELECT executions, measured_peak_bytes, fits, (SELECT steps FROM executions) FROM plan_outcomes")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	if !rows.Next() {
		t.Fatal("no plan outcome")
	}
	if v := rows.Values(); !reflect.DeepEqual(v, []any{int64(1), got.Plan.PeakBytes - 1, int64(1), int64(1)}) {
		t.Fatalf("plan_outcomes row %v, want one execution of one step that fits", v)
	}
	for _, tt := range []struct {
		e     service.Execution
		field string
	}{
		{service.Execution{StepTimeS: -1}, "step_time_s"},
		{service.Execution{StepTimeS: math.NaN()}, "step_time_s"},
		{service.Execution{PeakBytes: -1}, "peak_bytes"},
		{service.Execution{Steps: -2}, "steps"},
	} {
		if _, err := s.RecordExecution(ctx, got.PlanID, tt.e); !errors.Is(err, service.ErrBadInput) || !strings.Contains(err.Error(), tt.field) {
			t.Errorf("RecordExecution(%+v): %v, want ErrBadInput naming %s", tt.e, err, tt.field)
		}
	}
	if _, err := s.RecordExecution(ctx, 99, service.Execution{}); !errors.Is(err, chainplan.ErrNotFound) {
		t.Errorf("execution of a missing plan: %v, want ErrNotFound", err)
	}
}

// The plans of a database written by release 0.1 (the CLI's parameters of that time: the
// --budget text, no source, no budget used) open, migrate, and read as Params.
func TestParamsOfRelease(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chainplan.db")
	copyFile(t, "../../testdata/store/release-0.1.db", path)
	ctx := context.Background()
	s, err := service.Open(ctx, path, service.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	plans, err := s.Store().Plans(ctx, 1)
	if err != nil || len(plans) != 3 {
		t.Fatalf("%d plans, %v", len(plans), err)
	}
	want := map[string]service.Params{
		"rotor":      {Algo: "rotor", Budget: service.Budget{Min: true}, BudgetBytes: 17190000, Slots: 500, Source: "cli"},
		"sequential": {Algo: "sequential", Budget: service.Budget{Min: true}, BudgetBytes: 17170432, Slots: 500, ChosenSegments: 4, Source: "cli"},
		"pofo":       {Algo: "pofo", Budget: service.Budget{Min: true}, BudgetBytes: 16793295, Slots: 158, Source: "cli"},
	}
	for _, p := range plans {
		got, err := service.ParamsOf(p.Params, &p.Plan)
		if err != nil || got != want[p.Plan.Algo] {
			t.Errorf("plan %d: ParamsOf(%s) = %+v, %v; want %+v", p.ID, p.Params, got, err, want[p.Plan.Algo])
		}
	}
	// Planning the release's run records the service's parameters beside the old ones.
	if _, err := s.PlanRun(ctx, service.LatestRun, service.Request{Min: true, Source: "cli"}); err != nil {
		t.Fatal(err)
	}
}

func TestParamsOfEarlierShapes(t *testing.T) {
	plan := &chainplan.Plan{Algo: "rotor", BudgetBytes: 5000, Slots: 500}
	tests := []struct {
		raw  string
		want service.Params
	}{
		// The bindings before the service.
		{`{"algo":"rotor","budget_bytes":4096,"slots":500,"segments":0,"min_budget":true,"source":"python"}`,
			service.Params{Algo: "rotor", Budget: service.Budget{Min: true}, BudgetBytes: 4096, Slots: 500, Source: "python"}},
		{`{"algo":"rotor","budget_bytes":4096,"slots":500,"segments":0,"min_budget":false,"source":"python"}`,
			service.Params{Algo: "rotor", Budget: service.Budget{Bytes: 4096}, BudgetBytes: 4096, Slots: 500, Source: "python"}},
		// The CLI before the service: the --budget text.
		{`{"algo":"rotor","budget":"2GiB","slots":500}`,
			service.Params{Algo: "rotor", Budget: service.Budget{Bytes: 2 << 30}, BudgetBytes: 5000, Slots: 500, Source: "cli"}},
		{`{"algo":"sequential","budget":"1e6","slots":500,"segments":3,"chosen_segments":3}`,
			service.Params{Algo: "sequential", Budget: service.Budget{Bytes: 1e6}, BudgetBytes: 5000, Slots: 500,
				Segments: 3, ChosenSegments: 3, Source: "cli"}},
		// Nothing stored: the plan's own figures.
		{`{}`, service.Params{Algo: "rotor", Budget: service.Budget{Bytes: 5000}, BudgetBytes: 5000, Slots: 500, Source: "cli"}},
		{``, service.Params{Algo: "rotor", Budget: service.Budget{Bytes: 5000}, BudgetBytes: 5000, Slots: 500, Source: "cli"}},
	}
	for _, tt := range tests {
		if got, err := service.ParamsOf(json.RawMessage(tt.raw), plan); err != nil || got != tt.want {
			t.Errorf("ParamsOf(%s) = %+v, %v\nwant %+v", tt.raw, got, err, tt.want)
		}
	}
	for _, bad := range []string{`{"budget":"lots"}`, `{"budget":true}`, `[1]`} {
		if _, err := service.ParamsOf(json.RawMessage(bad), plan); err == nil {
			t.Errorf("ParamsOf(%s) read without error", bad)
		}
	}
	// What the service writes reads back as itself.
	p := &chainplan.Plan{Algo: "pofo", BudgetBytes: 7000, Slots: 80,
		Offload: &chainplan.Offload{BandwidthBytesPerS: 12e9}}
	prm := service.ParamsFor(service.Request{Request: planner.Request{Algo: "pofo", BudgetBytes: 7000, Bandwidth: 12e9},
		Source: "checkpointed"}, p)
	raw, _ := json.Marshal(prm)
	if got, err := service.ParamsOf(raw, p); err != nil || got != prm {
		t.Errorf("ParamsOf(%s) = %+v, %v; want %+v", raw, got, err, prm)
	}
}

func TestIngestBytes(t *testing.T) {
	s := newService(t)
	ctx := context.Background()
	data, err := os.ReadFile(filepath.Join(profilesDir, "record_mlp.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	res, p, err := s.IngestBytes(ctx, data, "memory:record")
	if err != nil || res.RunID != 2 || res.Existing || p.Meta.ModelName == "" {
		t.Fatalf("IngestBytes = %+v, %v", res, err)
	}
	if res, _, err := s.IngestBytes(ctx, data, "elsewhere"); err != nil || !res.Existing || res.RunID != 2 {
		t.Fatalf("the same bytes again: %+v, %v; want run 2, existing", res, err)
	}
	r, err := s.Run(ctx, service.RunID(2))
	if err != nil || r.SourcePath != "memory:record" {
		t.Fatalf("run 2 = %+v, %v", r, err)
	}
	// A run without measured sizes is no chain: the error names the field.
	if _, err := s.PlanRun(ctx, service.RunID(2), service.Request{Min: true, Source: "cli"}); !errors.Is(err, chainplan.ErrInvalidChain) ||
		!strings.Contains(err.Error(), "saved_bytes") {
		t.Fatalf("plan of an unmeasured run: %v", err)
	}
	bad, err := os.ReadFile(filepath.Join(profilesDir, "bad_negative.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.IngestBytes(ctx, bad, "bad.arrow"); !errors.Is(err, profilearrow.ErrInvalidProfile) || !strings.HasPrefix(err.Error(), "bad.arrow: ") {
		t.Fatalf("bad profile: %v", err)
	}
	if _, _, err := s.Ingest(ctx, filepath.Join(t.TempDir(), "none.arrow")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}
