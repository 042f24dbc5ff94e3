package service_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/service"
	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/contiguous"
	"github.com/chainplan/chainplan/planner/pipeline"
	"github.com/chainplan/chainplan/profilearrow"
)

// resnetChain is the chain of the run newService stores.
func resnetChain(t *testing.T) *chainplan.Chain {
	t.Helper()
	prof, err := profilearrow.ReadFile(filepath.Join(profilesDir, "resnet_file.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := prof.Chain()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestSolvePipelineMinMemory(t *testing.T) {
	c := resnetChain(t)
	opts := pipeplan.Options{GPUs: 2, Bandwidth: 1e9}
	for _, algo := range []string{"contiguous", "pipedream"} {
		p, _, err := service.SolvePipeline(c, pipeplan.Request{Algo: algo, Options: opts, MinMemory: true})
		if err != nil {
			t.Fatalf("%s: %v", algo, err)
		}
		pr, err := pipeline.NewProblem(c, pipeplan.Options{GPUs: 2, Bandwidth: 1e9, MemoryBytes: p.MemoryBytes})
		if err != nil {
			t.Fatal(err)
		}
		if err := pipeline.Check(pr, p); err != nil {
			t.Fatalf("%s: %v", algo, err)
		}
		// One byte less is refused, naming the memory the plan used as the smallest.
		o := opts
		o.MemoryBytes = p.MemoryBytes - 1
		_, _, err = service.SolvePipeline(c, pipeplan.Request{Algo: algo, Options: o})
		var ie *pipeplan.InfeasibleError
		if !errors.As(err, &ie) || ie.MinMemoryBytes != p.MemoryBytes {
			t.Errorf("%s at %d bytes: %v, want an InfeasibleError naming %d", algo, o.MemoryBytes, err, p.MemoryBytes)
		}
	}
	// The registry's one check of the name (planner.SolvePipeline) refuses another family's.
	if _, _, err := service.SolvePipeline(c, pipeplan.Request{Algo: "rotor", Options: opts}); !errors.Is(err, chainplan.ErrUnsupported) {
		t.Errorf("algo rotor: %v, want ErrUnsupported", err)
	}
}

func TestPlanPipelineRun(t *testing.T) {
	s := newService(t)
	ctx := context.Background()
	req := pipeplan.Request{Algo: contiguous.Algo, Options: pipeplan.Options{GPUs: 2, Bandwidth: 12e9,
		ActivationModel: pipeplan.ActivationsInput}, MinMemory: true, Source: service.SourceCLI}
	got, err := s.PlanPipelineRun(ctx, service.LatestRun, req)
	if err != nil {
		t.Fatal(err)
	}
	want, _, err := service.SolvePipeline(resnetChain(t), req)
	if err != nil {
		t.Fatal(err)
	}
	got.Plan.SolveMS, want.SolveMS = 0, 0
	if got.RunID != 1 || got.PlanID != 1 || !reflect.DeepEqual(got.Plan, want) {
		t.Fatalf("PlanPipelineRun = run %d plan %d %+v, want %+v", got.RunID, got.PlanID, got.Plan, want)
	}
	doc, err := s.Store().PlanDocument(ctx, got.PlanID)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := pipeplan.Parse(doc)
	if err != nil || stored.Period != got.Plan.Period || len(stored.Stages) != len(got.Plan.Stages) {
		t.Fatalf("stored document %s (%v)", doc, err)
	}
	sp, err := s.Store().Plan(ctx, got.PlanID)
	if err != nil {
		t.Fatal(err)
	}
	var params map[string]any
	if err := json.Unmarshal(sp.Params, &params); err != nil {
		t.Fatal(err)
	}
	wantParams := map[string]any{"algo": "contiguous", "gpus": float64(2), "memory": "min",
		"memory_bytes": float64(got.Plan.MemoryBytes), "bandwidth_bytes_per_s": 12e9, "weight_copies": float64(2),
		"activation_model": "input", "temporaries": true, "headroom": float64(0), "checkpoint": false,
		"microbatches": float64(0), "time_limit_s": float64(0), "chosen": "", "source": "cli"}
	if !reflect.DeepEqual(params, wantParams) {
		t.Fatalf("params %s, want %v", sp.Params, wantParams)
	}
	// Failures record nothing.
	bad := req
	bad.MinMemory, bad.Options.MemoryBytes = false, 1
	if _, err := s.PlanPipelineRun(ctx, service.LatestRun, bad); !errors.Is(err, chainplan.ErrInfeasible) {
		t.Fatalf("1 byte: %v, want ErrInfeasible", err)
	}
	bad = req
	bad.Source = ""
	if _, err := s.PlanPipelineRun(ctx, service.LatestRun, bad); !errors.Is(err, service.ErrBadInput) {
		t.Fatalf("no source: %v, want ErrBadInput", err)
	}
	if plans, err := s.Store().Plans(ctx, 1); err != nil || len(plans) != 1 {
		t.Fatalf("%d plans after the failures, want 1 (%v)", len(plans), err)
	}
}

// TestPlanPipelineRunReuses: the same request on the same run gives back the stored plan
// (whoever asks, the defaults filled in alike), another request or Replan plans anew.
func TestPlanPipelineRunReuses(t *testing.T) {
	s := newService(t)
	ctx := context.Background()
	req := pipeplan.Request{Algo: contiguous.Algo, Options: pipeplan.Options{GPUs: 2, Bandwidth: 12e9},
		FasterMemory: true, Source: service.SourceCLI}
	first, err := s.PlanPipelineRun(ctx, service.LatestRun, req)
	if err != nil || first.Reused {
		t.Fatalf("first plan: %+v, %v", first, err)
	}
	if first.Plan.Speedup() <= 1 {
		t.Errorf("--memory faster: speed-up %g", first.Plan.Speedup())
	}
	again := req
	again.Source = service.SourcePython
	again.Options.WeightCopies = pipeplan.DefaultWeightCopies // the default, spelt out
	got, err := s.PlanPipelineRun(ctx, service.LatestRun, again)
	if err != nil || !got.Reused || got.PlanID != first.PlanID || got.Plan.Period != first.Plan.Period ||
		len(got.Notes) != 1 || !strings.Contains(got.Notes[0], "reused plan") {
		t.Fatalf("same request: %+v, %v; want plan %d reused", got, err, first.PlanID)
	}
	// The micro-batches per step are the runner's, not the planners': N = 4 and N = 8 are
	// the same request, and each gets back the plan with its own N.
	for _, n := range []int{4, 8, 0} {
		mb := again
		mb.Microbatches = n
		got, err := s.PlanPipelineRun(ctx, service.LatestRun, mb)
		if err != nil || !got.Reused || got.PlanID != first.PlanID || got.Plan.Microbatches != n {
			t.Fatalf("microbatches %d: %+v, %v; want plan %d reused with microbatches %d", n, got, err, first.PlanID, n)
		}
	}
	other := req
	other.Options.Headroom = 0.1
	if got, err = s.PlanPipelineRun(ctx, service.LatestRun, other); err != nil || got.Reused || got.PlanID == first.PlanID {
		t.Fatalf("another request: %+v, %v", got, err)
	}
	req.Replan = true
	if got, err = s.PlanPipelineRun(ctx, service.LatestRun, req); err != nil || got.Reused || got.PlanID == first.PlanID {
		t.Fatalf("replan: %+v, %v", got, err)
	}
	if plans, err := s.Store().Plans(ctx, 1); err != nil || len(plans) != 3 {
		t.Fatalf("%d plans stored, want 3 (%v)", len(plans), err)
	}
}
