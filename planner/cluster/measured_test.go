package cluster_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/cluster"
)

// Measured bandwidths replace the file's links of the nodes they match, newest first, and
// leave the cluster they were applied to unchanged.
func TestWithMeasuredHeterogeneous(t *testing.T) {
	c, err := cluster.ReadFile("../../examples/clusters/amp-het-cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	nominal := c.Pair(0, 1).Bandwidth
	ms := []cluster.Measurement{
		{ID: 3, Link: cluster.LinkIntra, Device: "V100-16GB", BytesPerS: 5e9},  // newest
		{ID: 2, Link: cluster.LinkIntra, Device: "V100-16GB", BytesPerS: 99e9}, // older: not used
		{ID: 1, Link: cluster.LinkInter, Device: "cuda:0", BytesPerS: 1e8},     // no node of type cuda:0
		{ID: 4, Link: cluster.LinkHost, Device: "T4-16GB", BytesPerS: 1e9},     // the file gives no host_bw
	}
	got, links, notes, err := c.WithMeasured(ms)
	if err != nil {
		t.Fatal(err)
	}
	if len(links) != 3 {
		t.Fatalf("links %+v notes %v: want the intra link of the 3 V100 nodes", links, notes)
	}
	// The rows no node could use are named (the older V100 row is not: it was replaced).
	if len(notes) != 2 || !strings.Contains(notes[0], "bandwidth 1 ") || !strings.Contains(notes[1], "bandwidth 4 ") {
		t.Fatalf("notes %q: want rows 1 and 4 named as not used", notes)
	}
	for i, l := range links {
		if l.Node != c.Nodes[i].Name || l.Link != "intra" || l.MeasuredBytesPerS != 5e9 || l.NominalBytesPerS != nominal || l.BandwidthID != 3 {
			t.Fatalf("link %d: %+v", i, l)
		}
	}
	if b := got.Pair(0, 1).Bandwidth; b != 5e9 {
		t.Fatalf("V100 pair: %g bytes/s, want the measured 5e9", b)
	}
	if b, want := got.Pair(12, 13).Bandwidth, c.Pair(12, 13).Bandwidth; b != want {
		t.Fatalf("T4 pair: %g, want the file's %g", b, want)
	}
	if got.Pair(0, 4).Bandwidth != c.Pair(0, 4).Bandwidth || got.Nodes[3].HostBandwidth != 0 {
		t.Fatalf("inter or host links changed: %+v", got.Nodes)
	}
	if c.Pair(0, 1).Bandwidth != nominal {
		t.Fatal("WithMeasured changed the cluster it was given")
	}
}

// On a cluster of one device type the run's device ("cpu", "cuda:0") is the cluster's.
func TestWithMeasuredOneType(t *testing.T) {
	c := mustParse(t, `{name: two, nodes: [{name: n, count: 2, gpu: A, gpus: 2, gpu_mem: 1e9, intra_bw: 1e10, inter_bw: 1e9}]}`)
	got, links, _, err := c.WithMeasured([]cluster.Measurement{{ID: 7, Link: cluster.LinkInter, Device: "cuda:0", BytesPerS: 2e8}})
	if err != nil || len(links) != 2 {
		t.Fatalf("links %+v, err %v", links, err)
	}
	if b := got.Pair(0, 2).Bandwidth; b != 2e8 {
		t.Fatalf("inter-node pair: %g, want 2e8", b)
	}
	// A link measured between CPU ranks is not a GPU cluster's: not used, with a note.
	same, links, notes, err := c.WithMeasured([]cluster.Measurement{{ID: 8, Link: cluster.LinkInter, Device: "cpu", BytesPerS: 2e8}})
	if err != nil || same != c || links != nil || len(notes) != 1 || !strings.Contains(notes[0], "bandwidth 8") {
		t.Fatalf("a CPU row on a GPU cluster: links %+v, notes %q, err %v", links, notes, err)
	}
	cpus := mustParse(t, `{name: cpus, nodes: [{name: n, count: 2, gpu: CPU-thread, gpus: 2, gpu_mem: 1e9, intra_bw: 1e10, inter_bw: 1e9}]}`)
	if _, links, _, err := cpus.WithMeasured([]cluster.Measurement{{ID: 8, Link: cluster.LinkInter, Device: "cpu", BytesPerS: 2e8}}); err != nil || len(links) != 2 {
		t.Fatalf("a CPU row on a CPU cluster: links %+v, err %v", links, err)
	}
	// No measurement: the cluster itself.
	if same, links, notes, err := c.WithMeasured(nil); same != c || links != nil || notes != nil || err != nil {
		t.Fatal("no measurement changed something")
	}
}

// An absurd measurement that would be used is refused, naming its row; a bandwidth matrix
// keeps its pairs, with a note.
func TestWithMeasuredRefusals(t *testing.T) {
	c := mustParse(t, `{name: one, nodes: [{name: n, gpu: A, gpus: 2, gpu_mem: 1e9, intra_bw: 1e10}]}`)
	for _, bad := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		_, _, _, err := c.WithMeasured([]cluster.Measurement{{ID: 9, Link: cluster.LinkIntra, Device: "cuda:0", BytesPerS: bad}})
		if !errors.Is(err, chainplan.ErrUnsupported) || !strings.Contains(err.Error(), "measured bandwidth 9") ||
			!strings.Contains(err.Error(), "--nominal-links") {
			t.Fatalf("%v bytes/s: %v", bad, err)
		}
	}
	m := mustParse(t, `{name: m, nodes: [{name: n, gpu: A, gpus: 2, gpu_mem: 1e9, intra_bw: 1e10}], bandwidth_matrix: [[0, 3e9], [3e9, 0]]}`)
	got, links, notes, err := m.WithMeasured([]cluster.Measurement{{ID: 5, Link: cluster.LinkIntra, Device: "cuda:0", BytesPerS: 1e9}})
	if err != nil || len(links) != 0 || len(notes) != 1 || !strings.Contains(notes[0], "bandwidth_matrix") || got.Pair(0, 1).Bandwidth != 3e9 {
		t.Fatalf("matrix: links %+v notes %v err %v", links, notes, err)
	}
}
