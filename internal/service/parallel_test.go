package service_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"path/filepath"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/service"
	"github.com/chainplan/chainplan/planner/amp"
	"github.com/chainplan/chainplan/planner/cluster"
	"github.com/chainplan/chainplan/planner/paradl"
	"github.com/chainplan/chainplan/planner/workload"
)

func exampleCluster(t *testing.T, name string) *cluster.Cluster {
	t.Helper()
	c, err := cluster.ReadFile(filepath.Join("..", "..", "examples", "clusters", name))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A stored profile with the parallel fields is advised on and searched, both recorded with
// their cluster; measured runs give the accuracy report.
func TestAdviseAndSearchStoredRun(t *testing.T) {
	s := newService(t)
	ctx := context.Background()
	res, _, err := s.Ingest(ctx, filepath.Join(profilesDir, "resnet_parallel.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	m, runID, err := s.RunWorkload(ctx, service.RunID(res.RunID))
	if err != nil || runID != res.RunID || !m.Known.Has(workload.FieldModules|workload.FieldOptimizer|workload.FieldBatchTimes) {
		t.Fatalf("RunWorkload = %+v, %d, %v", m, runID, err)
	}
	// The file gives the same workload as the stored run, through the one source envelope.
	file, err := service.Resolve(ctx, nil, service.Source{ProfilePath: filepath.Join(profilesDir, "resnet_parallel.arrow")})
	if err != nil {
		t.Fatal(err)
	}
	fm, err := service.WorkloadOf(ctx, file, 0, 0, "batch")
	if err != nil || fm.Known != m.Known || fm.Layers[2].Parts[1] != m.Layers[2].Parts[1] {
		t.Fatalf("WorkloadOf(profile file) = %+v, %v", fm, err)
	}
	stored, err := service.Resolve(ctx, s, service.RunSource(service.RunID(res.RunID)))
	if err != nil {
		t.Fatal(err)
	}
	if sm, err := service.WorkloadOf(ctx, stored, 0, 0, "batch"); err != nil || sm.Known != m.Known {
		t.Fatalf("WorkloadOf(run) = %+v, %v", sm, err)
	}
	in := service.ParallelInput{Model: m, Cluster: exampleCluster(t, "a100-64.yaml"), RunID: runID, Source: service.SourcePython}
	adv, err := s.Advise(ctx, in, paradl.Options{DatasetSize: 50_000, BatchPerDevice: 32, Devices: []int{1, 8, 64}})
	if err != nil || adv.AdviceID != 1 {
		t.Fatalf("Advise = %+v, %v", adv, err)
	}
	srch, err := s.Search3D(ctx, in, amp.Options{GlobalBatch: 256, TopK: 5})
	if err != nil || srch.AdviceID != 2 || len(srch.Search.Candidates) != 5 {
		t.Fatalf("Search3D = %+v, %v", srch, err)
	}
	// The store holds one cluster, two advice, their candidates (search3d: top 5 and Megatron).
	var clusters, advice, cands3d int
	q := func(sql string, dst *int) {
		rows, err := s.Store().Query(ctx, sql)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		if !rows.Next() {
			t.Fatalf("%s: no row", sql)
		}
		*dst = int(rows.Values()[0].(int64))
	}
	q("SELECT count(*) FROM clusters", &clusters)
	q("SELECT count(*) FROM advice", &advice)
	q("SELECT count(*) FROM advice_candidates WHERE advice_id = 2", &cands3d)
	if clusters != 1 || advice != 2 || cands3d != 6 {
		t.Fatalf("clusters %d, advice %d, search3d candidates %d; want 1, 2, 6", clusters, advice, cands3d)
	}
	// Measured runs: candidate 0 10% slow, candidate 1 10% fast, candidate 2 out of memory.
	cands := adv.Advice.Candidates
	for i, f := range []float64{1.1, 0.9} {
		if _, err := s.RecordAdviceMeasurement(ctx, 1, service.AdviceMeasurement{Candidate: i, Iterations: 50,
			IterationTimeS: f * cands[i].IterationTimeS, PeakBytes: 1 << 30, Host: "h"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.RecordAdviceMeasurement(ctx, 1, service.AdviceMeasurement{Candidate: 2, Iterations: 1, IterationTimeS: 1, OutOfMemory: true}); err != nil {
		t.Fatal(err)
	}
	rep, err := s.Accuracy(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Candidates) != 3 || rep.OutOfMemory != 1 || rep.Candidates[2].Accuracy != nil {
		t.Fatalf("report %+v", rep)
	}
	// 1 − |p − 1.1p|/1.1p = 0.9091, 1 − |p − 0.9p|/0.9p = 0.8889.
	if math.Abs(*rep.Candidates[0].Accuracy-(1-0.1/1.1)) > 1e-12 || math.Abs(rep.MeanAccuracy-(2-0.1/1.1-0.1/0.9)/2) > 1e-12 {
		t.Fatalf("accuracy %v, mean %v", *rep.Candidates[0].Accuracy, rep.MeanAccuracy)
	}
	if rep.Spearman == nil || math.Abs(*rep.Spearman) != 1 {
		t.Fatalf("Spearman %v, want ±1 over two candidates", rep.Spearman)
	}
	// Bad measurements and unknown candidates.
	if _, err := s.RecordAdviceMeasurement(ctx, 1, service.AdviceMeasurement{Candidate: 0, Iterations: 0, IterationTimeS: 1}); !errors.Is(err, service.ErrBadInput) {
		t.Fatalf("0 iterations: %v", err)
	}
	if _, err := s.RecordAdviceMeasurement(ctx, 1, service.AdviceMeasurement{Candidate: 999, Iterations: 1, IterationTimeS: 1}); !errors.Is(err, chainplan.ErrNotFound) {
		t.Fatalf("candidate 999: %v", err)
	}
	if _, err := s.Accuracy(ctx, 77); !errors.Is(err, chainplan.ErrNotFound) {
		t.Fatalf("advice 77: %v", err)
	}
	// The stored result is the document returned.
	a, err := s.Store().AdviceByID(ctx, 2)
	if err != nil || a.Kind != "search3d" || !a.RunID.Valid {
		t.Fatalf("AdviceByID = %+v, %v", a, err)
	}
	var doc amp.Result
	if err := json.Unmarshal([]byte(a.ResultJSON), &doc); err != nil || doc.Candidates[0].IterationTimeS != srch.Search.Candidates[0].IterationTimeS {
		t.Fatalf("stored result: %v", err)
	}
}

// A chain file's advice is not stored (no run), and without a database at all.
func TestAdviseChainNotStored(t *testing.T) {
	c, err := chainplan.ReadChain(filepath.Join("..", "..", "examples", "resnet50.json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := service.ChainWorkload(c, "resnet50", 0, 4); !errors.Is(err, service.ErrBadInput) {
		t.Fatalf("batch 0: %v", err)
	}
	m, err := service.ChainWorkload(c, "resnet50", 128, 4)
	if err != nil {
		t.Fatal(err)
	}
	var none *service.Service
	got, err := none.Advise(context.Background(), service.ParallelInput{Model: m, Cluster: exampleCluster(t, "abci.yaml"), Source: service.SourceCLI},
		paradl.Options{DatasetSize: 1_281_167, BatchPerDevice: 64, Devices: []int{4, 64}})
	if err != nil || got.AdviceID != 0 || service.CheckFeasible(got.Advice) != nil {
		t.Fatalf("Advise(chain) = %+v, %v", got, err)
	}
	// No candidate fits 1 GB devices: the error gives the least memory.
	small, err := cluster.New(cluster.Cluster{Name: "tiny", Nodes: []cluster.Node{{Name: "n", DeviceType: "X", Devices: 2, MemoryBytes: 1 << 20,
		IntraBandwidth: 1e10, NICs: 1}}, Contention: cluster.Contention{Mode: cluster.ContentionNone}})
	if err != nil {
		t.Fatal(err)
	}
	got, err = none.Advise(context.Background(), service.ParallelInput{Model: m, Cluster: small}, paradl.Options{DatasetSize: 100, GlobalBatch: 64})
	if err != nil {
		t.Fatal(err)
	}
	var nc *service.NoCandidateError
	if err := service.CheckFeasible(got.Advice); !errors.As(err, &nc) || !errors.Is(err, chainplan.ErrInfeasible) || nc.LeastBytes <= 1<<20 {
		t.Fatalf("CheckFeasible = %v", err)
	}
}
