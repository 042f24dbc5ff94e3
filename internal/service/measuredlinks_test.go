package service_test

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/mattn/go-sqlite3" // to write a row around the store's checks

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/service"
	"github.com/chainplan/chainplan/planner/amp"
	"github.com/chainplan/chainplan/planner/paradl"
	"github.com/chainplan/chainplan/store"
)

// linkedRun stores the parallel ResNet profile and returns the service and the advisors'
// input for it on cpu-4 (one node of 4 "cpu" devices, 10 Gbps between them).
func linkedRun(t *testing.T) (*service.Service, service.ParallelInput) {
	t.Helper()
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
	return s, service.ParallelInput{Model: m, Cluster: exampleCluster(t, "cpu-4.yaml"), RunID: runID, Source: service.SourceCLI}
}

var search3dLinks = amp.Options{GlobalBatch: 32, TopK: -1, MemoryCheck: amp.MemoryOff}

// commTimes maps each search3d candidate (pp, dp, tmp, mbs, placement, cut) to its
// predicted communication and iteration time.
func commTimes(t *testing.T, s *service.Service, in service.ParallelInput) (map[[4]int][2]float64, *amp.Result) {
	t.Helper()
	got, err := s.Search3D(context.Background(), in, search3dLinks)
	if err != nil {
		t.Fatal(err)
	}
	out := map[[4]int][2]float64{}
	for _, c := range got.Search.Candidates {
		k := [4]int{c.PP, c.DP, c.TMP, c.MBS}
		if prev, ok := out[k]; !ok || c.IterationTimeS < prev[1] {
			out[k] = [2]float64{c.CommS, c.IterationTimeS}
		}
	}
	return out, got.Search
}

// A measured intra-node bandwidth stored with the run, slower than the cluster file's,
// slows every candidate that communicates and names the link; with none stored, or with
// NominalLinks, the predictions are the file's.
func TestSearch3DMeasuredLinks(t *testing.T) {
	s, in := linkedRun(t)
	ctx := context.Background()
	nominal, r := commTimes(t, s, in)
	if r.MeasuredLinks != nil || strings.Contains(strings.Join(r.Notes, "\n"), "measured") {
		t.Fatalf("no row stored, yet measured links %+v, notes %v", r.MeasuredLinks, r.Notes)
	}
	fileBW := in.Cluster.Nodes[0].IntraBandwidth
	if err := s.Store().RecordBandwidth(ctx, &store.Bandwidth{RunID: in.RunID, BytesPerS: fileBW / 10, Device: "cpu",
		Method: "gloo all-reduce", Link: store.LinkIntra}); err != nil {
		t.Fatal(err)
	}
	measured, r := commTimes(t, s, in)
	if len(r.MeasuredLinks) != 1 || r.MeasuredLinks[0].Node != in.Cluster.Nodes[0].Name ||
		r.MeasuredLinks[0].NominalBytesPerS != fileBW || r.MeasuredLinks[0].MeasuredBytesPerS != fileBW/10 {
		t.Fatalf("measured links %+v", r.MeasuredLinks)
	}
	if note := strings.Join(r.Notes, "\n"); !strings.Contains(note, "link bandwidths measured with run") || !strings.Contains(note, "intra-node") {
		t.Fatalf("notes %v do not say which links were measured", r.Notes)
	}
	slower := 0
	for k, n := range nominal {
		m := measured[k]
		switch {
		case m[0] < n[0]:
			t.Fatalf("%v: communication %g s measured < %g s nominal", k, m[0], n[0])
		case n[0] > 0 && m[0] > n[0]:
			slower++
		}
	}
	if slower == 0 {
		t.Fatal("no candidate's communication slowed at a tenth of the bandwidth")
	}
	in.NominalLinks = true
	again, r := commTimes(t, s, in)
	if r.MeasuredLinks != nil {
		t.Fatalf("NominalLinks: measured links %+v", r.MeasuredLinks)
	}
	for k, n := range nominal {
		if again[k] != n {
			t.Fatalf("NominalLinks: %v predicted %v, the file's %v", k, again[k], n)
		}
	}
}

// advise's data parallelism all-reduces over the measured link too.
func TestAdviseMeasuredLinks(t *testing.T) {
	s, in := linkedRun(t)
	ctx := context.Background()
	o := paradl.Options{DatasetSize: 50_000, GlobalBatch: 32, Devices: []int{4}, Strategies: []paradl.Strategy{paradl.Data}}
	epoch := func() (float64, *paradl.Advice) {
		got, err := s.Advise(ctx, in, o)
		if err != nil || len(got.Advice.Candidates) != 1 {
			t.Fatalf("Advise = %+v, %v", got, err)
		}
		return got.Advice.Candidates[0].EpochTimeS, got.Advice
	}
	before, _ := epoch()
	if err := s.Store().RecordBandwidth(ctx, &store.Bandwidth{RunID: in.RunID, BytesPerS: 1e6, Device: "cpu", Link: store.LinkIntra}); err != nil {
		t.Fatal(err)
	}
	after, a := epoch()
	if !(after > before) || len(a.MeasuredLinks) != 1 || a.MeasuredLinks[0].Link != "intra" {
		t.Fatalf("epoch %g s with the measured link, %g s with the file's; links %+v", after, before, a.MeasuredLinks)
	}
}

// A stored value that is not a positive, finite bandwidth (written around RecordBandwidth)
// is refused as bad input naming its row; NominalLinks plans regardless.
func TestMeasuredLinksAbsurd(t *testing.T) {
	s, in := linkedRun(t)
	raw, err := sql.Open("sqlite3", s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(`INSERT INTO bandwidths (run_id, measured_at, bandwidth_bytes_per_s, device, method, link)
		VALUES (?, '2026-12-07T00:00:00Z', ?, 'cpu', 'hand', 'intra')`, in.RunID, math.Inf(1)); err != nil {
		t.Fatal(err)
	}
	_, err = s.Search3D(context.Background(), in, search3dLinks)
	if !errors.Is(err, chainplan.ErrUnsupported) || !strings.Contains(err.Error(), "measured bandwidth 1 ") ||
		!strings.Contains(err.Error(), "--nominal-links") {
		t.Fatalf("Search3D with an infinite stored bandwidth: %v", err)
	}
	in.NominalLinks = true
	if _, err := s.Search3D(context.Background(), in, search3dLinks); err != nil {
		t.Fatal(err)
	}
}
