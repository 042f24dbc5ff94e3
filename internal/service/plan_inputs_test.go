package service_test

import (
	"context"
	"os"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/service"
	"github.com/chainplan/chainplan/planner"
	"github.com/chainplan/chainplan/profilearrow"
)

// TestDefaultAlgorithmPerInput: a request that names no algorithm plans with the input's
// default — multichain for towers (a stored run or a file), rotor-ops for a chain whose
// stages have operation-level options, else rotor — and records that name with a stored
// run's plan; the input shape comes with the plan of a run or a profile file.
func TestDefaultAlgorithmPerInput(t *testing.T) {
	ctx := context.Background()
	s := newService(t) // run 1: resnet, one chain
	min := service.Request{Min: true, Source: service.SourcePython}
	got, err := s.PlanRun(ctx, service.RunID(1), min)
	if err != nil || got.Algo != "rotor" || got.Plan.Algo != "rotor" || len(got.InputShape) == 0 || got.PlanID == 0 {
		t.Fatalf("PlanRun(run 1, no algo) = %+v, %v", got, err)
	}
	path := towersProfile(t)
	res, _, err := s.Ingest(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	got, err = s.PlanRun(ctx, service.RunID(res.RunID), min)
	if err != nil || got.Algo != planner.DefaultMultichainAlgo || got.MultiChain == nil || got.InputShape[0] != 8 {
		t.Fatalf("PlanRun(towers, no algo) = %+v, %v", got, err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	prof, err := profilearrow.Read(data)
	if err != nil {
		t.Fatal(err)
	}
	if got, err = service.PlanProfile(prof, min); err != nil || got.Algo != planner.DefaultMultichainAlgo || got.PlanID != 0 {
		t.Fatalf("PlanProfile(towers, no algo) = %+v, %v", got, err)
	}

	c, err := s.RunChain(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got, err = service.PlanChain(c, min); err != nil || got.Algo != "rotor" || got.InputShape != nil {
		t.Fatalf("PlanChain(no options) = %+v, %v", got, err)
	}
	c.Stages[0].Options = []chainplan.StageOption{{SavedBytes: c.Stages[0].OutBytes, FwdTmpBytes: c.Stages[0].FwdTmpBytes,
		RecomputeTime: c.Stages[0].FwdTime, Keep: []int{0}}}
	if planner.DefaultAlgo(c) != "rotor-ops" {
		t.Fatalf("DefaultAlgo of a chain with options = %q, want rotor-ops", planner.DefaultAlgo(c))
	}
}
