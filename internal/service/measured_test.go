package service_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chainplan/chainplan/internal/service"
	"github.com/chainplan/chainplan/planner/amp"
	"github.com/chainplan/chainplan/planner/paradl"
)

// The stored search3d advice carries the launch fields (issue 34) in every candidate's
// detail, and a distributed run's per-rank peaks are recorded: the largest as the peak,
// the list in the measurement's metadata.
func TestStoredLaunchShapeAndRankPeaks(t *testing.T) {
	s := newService(t)
	ctx := context.Background()
	res, _, err := s.Ingest(ctx, filepath.Join(profilesDir, "resnet_parallel.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	m, runID, err := s.RunWorkload(ctx, service.RunID(res.RunID))
	if err != nil {
		t.Fatal(err)
	}
	in := service.ParallelInput{Model: m, Cluster: exampleCluster(t, "a100-64.yaml"), RunID: runID, Source: service.SourceCLI}
	srch, err := s.Search3D(ctx, in, amp.Options{GlobalBatch: 256, TopK: 3})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := s.Store().Query(ctx, "SELECT detail_json FROM advice_candidates WHERE advice_id = ? AND candidate = 0", srch.AdviceID)
	if err != nil {
		t.Fatal(err)
	}
	if !rows.Next() {
		t.Fatal("no stored candidate 0")
	}
	var stored struct {
		Launch struct {
			Mesh         struct{ PP, DP, TP int }
			Microbatch   int
			Microbatches int
			Cuts         []int
			Checkpoint   []any
		}
	}
	if err := json.Unmarshal([]byte(rows.Values()[0].(string)), &stored); err != nil {
		t.Fatal(err)
	}
	detail := stored.Launch
	rows.Close()
	best := srch.Search.Candidates[0]
	if detail.Mesh.PP != best.PP || detail.Mesh.DP != best.DP || detail.Mesh.TP != best.TMP || detail.Microbatch != best.MBS ||
		detail.Microbatches != best.GAS || len(detail.Cuts) != best.PP-1 || len(detail.Checkpoint) != best.PP {
		t.Fatalf("stored launch fields %+v of candidate %+v", detail, best)
	}

	peaks := []int64{3 << 30, 5 << 30, 4 << 30}
	mid, err := s.RecordAdviceMeasurement(ctx, srch.AdviceID, service.AdviceMeasurement{Candidate: 0, Iterations: 5,
		IterationTimeS: best.IterationTimeS, PeakBytesPerRank: peaks, Host: "h", Metadata: map[string]string{"launcher": "t"}})
	if err != nil {
		t.Fatal(err)
	}
	rows, err = s.Store().Query(ctx, "SELECT peak_bytes, metadata_json FROM advice_measurements WHERE measurement_id = ?", mid)
	if err != nil {
		t.Fatal(err)
	}
	if !rows.Next() {
		t.Fatal("no stored measurement")
	}
	v := rows.Values()
	rows.Close()
	var meta struct {
		Peaks    []int64 `json:"peak_bytes_per_rank"`
		Launcher string  `json:"launcher"`
	}
	if err := json.Unmarshal([]byte(v[1].(string)), &meta); err != nil {
		t.Fatal(err)
	}
	if v[0].(int64) != 5<<30 || len(meta.Peaks) != 3 || meta.Peaks[1] != 5<<30 || meta.Launcher != "t" {
		t.Fatalf("stored peak %v, metadata %s", v[0], v[1])
	}
	rep, err := s.Accuracy(ctx, srch.AdviceID)
	if err != nil || rep.Candidates[0].MeasuredPeakBytes != 5<<30 || rep.MeanAccuracy != 1 {
		t.Fatalf("report %+v, %v", rep, err)
	}
	for _, bad := range []service.AdviceMeasurement{
		{Candidate: 0, Iterations: 1, IterationTimeS: 1, PeakBytesPerRank: []int64{1, -1}},
		{Candidate: 0, Iterations: 1, IterationTimeS: 1, PeakBytesPerRank: []int64{1, 2}, PeakBytes: 1},
		{Candidate: 0, Iterations: 1, IterationTimeS: 1, PeakBytesPerRank: []int64{1}, Metadata: map[string]string{"peak_bytes_per_rank": "x"}},
	} {
		if _, err := s.RecordAdviceMeasurement(ctx, srch.AdviceID, bad); !errors.Is(err, service.ErrBadInput) {
			t.Errorf("%+v: %v, want ErrBadInput", bad, err)
		}
	}
}

// Calibrate refuses what it cannot fit: advise's advice, advice on two clusters, no id.
func TestCalibrateRefusals(t *testing.T) {
	s := newService(t)
	ctx := context.Background()
	res, _, err := s.Ingest(ctx, filepath.Join(profilesDir, "resnet_parallel.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	m, runID, err := s.RunWorkload(ctx, service.RunID(res.RunID))
	if err != nil {
		t.Fatal(err)
	}
	in := service.ParallelInput{Model: m, Cluster: exampleCluster(t, "a100-64.yaml"), RunID: runID, Source: service.SourceCLI}
	adv, err := s.Advise(ctx, in, paradl.Options{DatasetSize: 50_000, BatchPerDevice: 32, Devices: []int{8}})
	if err != nil {
		t.Fatal(err)
	}
	s1, err := s.Search3D(ctx, in, amp.Options{GlobalBatch: 256, TopK: 3})
	if err != nil {
		t.Fatal(err)
	}
	in.Cluster = exampleCluster(t, "amp-homogeneous.yaml")
	s2, err := s.Search3D(ctx, in, amp.Options{GlobalBatch: 32, TopK: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		ids  []int64
		want string
	}{
		{nil, "at least one"},
		{[]int64{adv.AdviceID}, "only search3d"},
		{[]int64{s1.AdviceID, s2.AdviceID}, "per cluster"},
		{[]int64{s1.AdviceID}, "at least 2"},
	} {
		if _, err := s.Calibrate(ctx, tt.ids); !errors.Is(err, service.ErrBadInput) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Calibrate(%v): %v, want ErrBadInput naming %q", tt.ids, err, tt.want)
		}
	}
}
