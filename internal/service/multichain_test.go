package service_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/service"
	"github.com/chainplan/chainplan/planner"
	"github.com/chainplan/chainplan/profile"
	"github.com/chainplan/chainplan/profilearrow"
)

// towersProfile writes a profile of two towers (three stages and two) run by three inputs
// (the first tower shared by two) and a joint loss, and returns its path.
func towersProfile(t *testing.T) string {
	t.Helper()
	p := &profilearrow.Profile{Meta: profile.Metadata{Format: profile.Format, ModelName: "triplet", ModelSignature: "sha256:1",
		TorchVersion: "2.5", Device: "cpu", DeviceName: "cpu", DType: "float32", BatchSize: 8, InputShape: []int64{8, 16},
		Threads: 1, TimingMethod: "perf_counter", Reps: 1, CreatedAt: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), Host: "h",
		Extra: map[string]string{profile.KeyTowers: `{"lengths": [3, 2], "branches": [0, 0, 1], "input_bytes": [512, 512, 256]}`}}}
	valid := func(v int64) profile.NullInt64 { return profile.NullInt64{Int64: v, Valid: true} }
	for k := 1; k <= 6; k++ {
		kind, out := profile.KindStage, int64(1024*k)
		if k == 6 {
			kind, out = profile.KindLoss, 0
		}
		p.Rows = append(p.Rows, profile.Row{StageIndex: k, StageName: fmt.Sprintf("s%d", k), StageKind: kind,
			Measures: profile.Measures{FwdTimeS: 0.001 * float64(k), BwdTimeS: 0.002, InBytes: 512, OutBytes: out,
				SavedBytes: valid(out * 2), FwdTmpBytes: valid(0), BwdTmpBytes: valid(128)}})
	}
	path := filepath.Join(t.TempDir(), "towers.arrow")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := profilearrow.Write(f, p, profilearrow.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestPlanTowersRun plans a stored profile of towers with each multichain algorithm: the
// plan is recorded like every plan, replays on the run's bundle, and single-chain
// algorithms are refused with a pointer to the multichain ones (and the converse).
func TestPlanTowersRun(t *testing.T) {
	s := newService(t) // run 1: a chain
	ctx := context.Background()
	res, _, err := s.Ingest(ctx, towersProfile(t))
	if err != nil {
		t.Fatal(err)
	}
	id := res.RunID
	mc, err := s.RunMultiChain(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got := mc.Lengths(); len(got) != 3 || got[0] != 3 || got[2] != 2 || mc.Branches[2].InputBytes != 256 {
		t.Fatalf("bundle of the run: lengths %v", got)
	}
	for _, algo := range planner.MultichainAlgos() {
		got, err := s.PlanRun(ctx, service.RunID(id), service.Request{Request: planner.Request{Algo: algo, Slots: 500},
			Min: true, Source: service.SourcePython})
		if err != nil {
			t.Fatalf("%s: %v", algo, err)
		}
		if got.MultiChain == nil || got.Chain != nil || got.Plan.Multichain == nil {
			t.Fatalf("%s: planned %+v", algo, got)
		}
		sp, smc, err := s.StoredMultichainPlan(ctx, got.PlanID)
		if err != nil || sp.RunID != id || sp.Plan.Multichain.Branches != 3 {
			t.Fatalf("%s: stored %+v, %v", algo, sp, err)
		}
		if _, err := planner.SimulateMultichain(smc, &sp.Plan, sp.Plan.BudgetBytes); err != nil {
			t.Fatalf("%s: the stored plan does not replay: %v", algo, err)
		}
		if d, err := s.PlanTimeline(ctx, got.PlanID); err != nil || d.PeakBytes != got.Plan.PeakBytes {
			t.Fatalf("%s: timeline %v", algo, err)
		}
	}
	_, err = s.PlanRun(ctx, service.RunID(id), service.Request{Request: planner.Request{Algo: "rotor", BudgetBytes: 1 << 20},
		Source: service.SourceCLI})
	if !errors.Is(err, chainplan.ErrUnsupported) || !strings.Contains(err.Error(), "--algo multichain") {
		t.Fatalf("rotor on a towers run: %v", err)
	}
	_, err = s.PlanRun(ctx, service.RunID(1), service.Request{Request: planner.Request{Algo: "multichain", BudgetBytes: 1 << 30},
		Source: service.SourceCLI})
	if !errors.Is(err, chainplan.ErrUnsupported) || !strings.Contains(err.Error(), "one chain") {
		t.Fatalf("multichain on a chain run: %v", err)
	}
	// Planning below the smallest budget records nothing.
	plans, _ := s.Store().Plans(ctx, id)
	_, err = s.PlanRun(ctx, service.RunID(id), service.Request{Request: planner.Request{Algo: "multichain", BudgetBytes: 1},
		Source: service.SourceCLI})
	var ie *chainplan.InfeasibleError
	if !errors.As(err, &ie) || ie.MinBudgetBytes <= 1 {
		t.Fatalf("budget 1: %v", err)
	}
	if again, _ := s.Store().Plans(ctx, id); len(again) != len(plans) {
		t.Fatalf("an infeasible request recorded a plan")
	}
}
