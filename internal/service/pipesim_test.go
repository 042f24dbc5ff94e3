package service_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/service"
	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/contiguous"
	"github.com/chainplan/chainplan/planner/pipesim"
	"github.com/chainplan/chainplan/store"
)

func TestSimulate(t *testing.T) {
	c := resnetChain(t)
	l := len(c.Stages)
	r, err := service.Simulate(c, service.PipesimRequest{Schedule: "1f1b-flush", Stages: "3", Microbatches: 4, Bandwidth: 12e9})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Stages) != 3 || r.Stages[2].Last != l || !r.Links || r.PerDevice[0].StaticBytes <= 0 {
		t.Fatalf("3 balanced stages with links: %+v", r.Stages)
	}
	// Without a bandwidth transfers are free and there is no link.
	free, err := service.Simulate(c, service.PipesimRequest{Schedule: "1f1b-flush", Stages: "1-2," + "3-" + itoa(l), Microbatches: 4})
	if err != nil || free.Links || len(free.PerLink) != 0 || len(free.Stages) != 2 {
		t.Fatalf("ranges without bandwidth: %+v, %v", free, err)
	}
	// periodic replays a plan; the other schedules run its partition.
	p, _, err := service.SolvePipeline(c, pipeplan.Request{Algo: contiguous.Algo, Options: pipeplan.Options{GPUs: 2,
		Bandwidth: 12e9, MemoryBytes: 1 << 40}})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := service.Simulate(c, service.PipesimRequest{Schedule: "periodic", Plan: p, Microbatches: 1, Minibatches: 40})
	if err != nil || math.Abs(rep.MicrobatchPeriod-p.Period) > 1e-9*p.Period || rep.PerDevice[1].PeakBytes != p.MemoryPerGPU[1] {
		t.Fatalf("periodic: %v, %v; want the plan's period %v and memory %v", rep, err, p.Period, p.MemoryPerGPU)
	}
	if g, err := service.Simulate(c, service.PipesimRequest{Schedule: "gpipe", Plan: p, Microbatches: 4}); err != nil || g.Stages[1] != p.Stages[1] {
		t.Fatalf("gpipe on the plan's partition: %v", err)
	}
	for _, tt := range []struct {
		req  service.PipesimRequest
		want string
	}{
		{service.PipesimRequest{Schedule: "pipedream", Stages: "2", Microbatches: 2}, "unknown schedule"},
		{service.PipesimRequest{Schedule: "gpipe", Stages: "2", Microbatches: 0}, "N ≥ 1"},
		{service.PipesimRequest{Schedule: "gpipe", Stages: "1-2", Microbatches: 2}, "the chain has"},
		{service.PipesimRequest{Schedule: "gpipe", Microbatches: 2}, "stages are required"},
		{service.PipesimRequest{Schedule: "periodic", Stages: "2", Microbatches: 2}, "replays a chainplan.pipeline/v1 plan"},
		{service.PipesimRequest{Schedule: "gpipe", Stages: "2", Plan: p, Microbatches: 2}, "not both"},
		{service.PipesimRequest{Schedule: "gpipe", Plan: p, Bandwidth: 1, Microbatches: 2}, "its own bandwidth"},
		{service.PipesimRequest{Schedule: "periodic", Plan: p, AlphaS: 1e-3, Microbatches: 2}, "no latency"},
		{service.PipesimRequest{Schedule: "gpipe", Stages: "2", Bandwidth: -1, Microbatches: 2}, "bandwidth must be"},
		{service.PipesimRequest{Schedule: "gpipe", Stages: "2", WeightCopies: -1, Microbatches: 2}, "weight_copies"},
		{service.PipesimRequest{Schedule: "gpipe", Stages: "2", Checkpoint: []int{5}, Microbatches: 2}, "checkpoint"},
	} {
		_, err := service.Simulate(c, tt.req)
		if err == nil || !strings.Contains(err.Error(), tt.want) ||
			!(errors.Is(err, service.ErrBadInput) || errors.Is(err, chainplan.ErrUnsupported) || errors.Is(err, chainplan.ErrInvalidPlan)) {
			t.Errorf("%+v: %v; want bad input saying %q", tt.req, err, tt.want)
		}
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestSimulateRun records simulations of a stored run and compares a stored plan's
// simulation with the executions the pipeline runner stored for it, rank by rank.
func TestSimulateRun(t *testing.T) {
	s := newService(t)
	ctx := context.Background()
	got, err := s.SimulateRun(ctx, service.LatestRun, service.PipesimRequest{Schedule: "gpipe", Stages: "2", Microbatches: 4,
		Source: service.SourceCLI})
	if err != nil {
		t.Fatal(err)
	}
	if got.SimulationID != 1 || got.RunID != 1 || len(got.Comparisons) != 0 {
		t.Fatalf("SimulateRun = %+v", got)
	}
	doc, err := s.Store().SimulationResult(ctx, got.SimulationID)
	var back pipesim.Result
	if err != nil || json.Unmarshal(doc, &back) != nil || back.Makespan != got.Result.Makespan || back.Schedule != pipesim.GPipe {
		t.Fatalf("stored result %s, %v", doc, err)
	}
	// A plan that ran: two ranks measured by the runner, with the plan's order.
	plan, err := s.PlanPipelineRun(ctx, service.LatestRun, pipeplan.Request{Algo: contiguous.Algo,
		Options: pipeplan.Options{GPUs: 2, Bandwidth: 12e9, MemoryBytes: 1 << 40, WeightCopies: 2}, Source: service.SourceCLI})
	if err != nil {
		t.Fatal(err)
	}
	for rank := range 2 {
		if _, err := s.Store().RecordExecution(ctx, &store.Execution{PlanID: plan.PlanID, Steps: 3, StepTimeS: 0.01,
			PeakBytes: 1000 + int64(rank), Device: "cpu", Metadata: map[string]string{"kind": "pipeline", "rank": itoa(rank),
				"world_size": "2", "schedule": "plan", "microbatches": "8", "rank_step_time_s": "0.125",
				"microbatch_time_s": "nan"}}); err != nil {
			t.Fatal(err)
		}
	}
	got, err = s.SimulateRun(ctx, service.RunRef{}, service.PipesimRequest{Schedule: "periodic", PlanID: plan.PlanID,
		Microbatches: 8, Flush: true, Source: service.SourcePython})
	if err != nil {
		t.Fatal(err)
	}
	cs := got.Comparisons
	if len(cs) != 2 || cs[1].Rank != 1 || cs[1].MeasuredPeakBytes != 1001 || cs[0].MeasuredStepS != 0.125 ||
		math.Abs(cs[0].PredictedStepS-got.Result.Period) > 1e-9*got.Result.Period || cs[1].PredictedPeakBytes != got.Result.PerDevice[1].PeakBytes ||
		!math.IsNaN(cs[0].MeasuredMicrobatchS) || !(cs[0].PredictedMicrobatchS > 0) {
		t.Fatalf("comparisons %+v", cs)
	}
	if b, err := json.Marshal(cs[0]); err != nil || !strings.Contains(string(b), `"measured_microbatch_s":null`) {
		t.Fatalf("comparison JSON %s, %v", b, err)
	}
	if slices.ContainsFunc(got.Result.Warnings, func(w string) bool { return strings.Contains(w, "no stored execution") }) {
		t.Fatalf("a hint beside matching executions: %v", got.Result.Warnings)
	}
	// 1f1b-flush compares with executions of Schedule1F1B only: none here, and a warning
	// says which schedule they ran and how to compare with them.
	got, err = s.SimulateRun(ctx, service.RunRef{}, service.PipesimRequest{Schedule: "1f1b-flush", PlanID: plan.PlanID,
		Microbatches: 8, Source: service.SourceCLI})
	if err != nil || len(got.Comparisons) != 0 {
		t.Fatalf("1f1b-flush: %v, %v", got, err)
	}
	want := "no stored execution of the pipeline runner ran Schedule1F1B: they ran plan (simulate --schedule periodic to compare)"
	if !slices.Contains(got.Result.Warnings, want) {
		t.Fatalf("warnings %q, want %q", got.Result.Warnings, want)
	}
	if n := countRows(t, s, "SELECT count(*) FROM simulations WHERE plan_id IS NOT NULL"); n != 2 {
		t.Fatalf("%d simulations of the plan stored, want 2", n)
	}
	if _, err := s.SimulateRun(ctx, service.RunID(9), service.PipesimRequest{Schedule: "gpipe", Stages: "2", Microbatches: 2,
		Source: service.SourceCLI}); !errors.Is(err, chainplan.ErrNotFound) {
		t.Fatalf("run 9: %v", err)
	}
	if _, err := s.SimulateRun(ctx, service.RunRef{}, service.PipesimRequest{Schedule: "gpipe", PlanID: 99, Microbatches: 2,
		Source: service.SourceCLI}); !errors.Is(err, chainplan.ErrNotFound) {
		t.Fatalf("plan 99: %v", err)
	}
}

func countRows(t *testing.T, s *service.Service, q string) int64 {
	t.Helper()
	rows, err := s.Store().Query(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	if !rows.Next() {
		t.Fatalf("%s: no row", q)
	}
	return rows.Values()[0].(int64)
}
