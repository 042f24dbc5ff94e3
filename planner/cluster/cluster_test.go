package cluster_test

import (
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/cluster"
)

func mustParse(tb testing.TB, src string) *cluster.Cluster {
	tb.Helper()
	c, err := cluster.Parse([]byte(src))
	if err != nil {
		tb.Fatalf("Parse: %v", err)
	}
	return c
}

func TestExampleClusters(t *testing.T) {
	files, err := filepath.Glob("../../examples/clusters/*.yaml")
	if err != nil || len(files) < 5 {
		t.Fatalf("example clusters: %v %v", files, err)
	}
	for _, f := range files {
		c, err := cluster.ReadFile(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		// The canonical document is itself a cluster file, read back to the same cluster.
		back, err := cluster.Parse(c.Canonical())
		if err != nil {
			t.Fatalf("%s: canonical form: %v", f, err)
		}
		if got, want := string(back.Canonical()), string(c.Canonical()); got != want {
			t.Fatalf("%s: canonical round trip differs:\n%s\nwant\n%s", f, got, want)
		}
	}
}

func TestAMPHeterogeneousFixture(t *testing.T) {
	c, err := cluster.ReadFile("../../examples/clusters/amp-het-cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.NumDevices(), 16; got != want {
		t.Fatalf("NumDevices()=%d, want %d", got, want)
	}
	gbps := func(g float64) float64 { return g * 1e9 / 8 }
	tests := []struct {
		a, b int
		want float64
	}{
		{0, 1, gbps(170)},  // inside a p3
		{12, 13, gbps(50)}, // inside the g4dn
		{0, 4, gbps(10)},   // p3 to p3
		{0, 12, gbps(10)},  // p3 to g4dn: min(10, 50)
	}
	for _, tt := range tests {
		if got := c.Pair(tt.a, tt.b).Bandwidth; got != tt.want {
			t.Errorf("Pair(%d, %d).Bandwidth=%v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
	// A group spanning the g4dn and a p3 runs at the slowest pair's bandwidth.
	if got, want := c.Group([]int{3, 12, 13}).Bandwidth, gbps(10); got != want {
		t.Errorf("Group bandwidth=%v, want %v", got, want)
	}
	if got, want := c.Group([]int{12, 13, 14, 15}).Bandwidth, gbps(50); got != want {
		t.Errorf("Group(g4dn) bandwidth=%v, want %v", got, want)
	}
}

// ParaDL's ABCI constants by communicator size (spec §2.11 A): α 9e-6 inside a node,
// 3.031e-5 up to 68 ranks, 3.049e-5 up to 136, 3.098e-5 beyond; 50e9 B/s inside a node,
// 12.5e9 B/s across.
func TestABCILevels(t *testing.T) {
	c, err := cluster.ReadFile("../../examples/clusters/abci.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		p       int
		alpha   float64
		bw      float64
		crosses bool
	}{
		{2, 9e-6, 50e9, false}, {4, 9e-6, 50e9, false}, {8, 3.031e-5, 12.5e9, true},
		{68, 3.031e-5, 12.5e9, true}, {72, 3.049e-5, 12.5e9, true}, {136, 3.049e-5, 12.5e9, true},
		{256, 3.098e-5, 12.5e9, true}, {2048, 3.098e-5, 12.5e9, true},
	}
	for _, tt := range tests {
		l := c.Group(cluster.Range(0, tt.p))
		if l.LatencyS != tt.alpha || l.Bandwidth != tt.bw || l.InterNode != tt.crosses {
			t.Errorf("Group(0..%d)=%+v, want α %v, bandwidth %v, inter-node %v", tt.p-1, l, tt.alpha, tt.bw, tt.crosses)
		}
	}
	// Four disjoint groups per node over two interfaces: φ = 2 (ParaDL's df projections).
	l := c.Group([]int{0, 4, 8})
	if got := c.Phi(l, []int{0, 4, 8}, 4); got != 2 {
		t.Errorf("Phi(4 groups, 2 NICs)=%v, want 2", got)
	}
	if got := c.Phi(c.Group([]int{0, 1}), []int{0, 1}, 4); got != 1 {
		t.Errorf("Phi(intra-node)=%v, want 1", got)
	}
}

// T_ar(p=4, m=100e6 B, α=5e-6, β=1/12.5e9) = 0.01203 s (spec §2.11 C, "other unit values").
func TestRingAllReduceUnitValue(t *testing.T) {
	got := cluster.RingAllReduce(4, 100e6, cluster.Link{LatencyS: 5e-6, Bandwidth: 12.5e9})
	if math.Abs(got-0.01203) > 1e-12 {
		t.Fatalf("RingAllReduce=%v, want 0.01203", got)
	}
	if got := cluster.RingAllGather(4, 1e6, cluster.Link{LatencyS: 1e-5, Bandwidth: 1e9}); math.Abs(got-3*(1e-5+1e-3)) > 1e-15 {
		t.Fatalf("RingAllGather=%v", got)
	}
	if got := cluster.RingAllReduce(1, 1e9, cluster.Link{Bandwidth: 1}); got != 0 {
		t.Fatalf("RingAllReduce(p=1)=%v, want 0", got)
	}
}

func TestMatrix(t *testing.T) {
	c := mustParse(t, `{"name": "m", "nodes": [{"gpu": "X", "gpus": 3, "gpu_mem": "1GB"}],
		"bandwidth_matrix_gbps": [[0, 8, 16], [8, 0, 80], [16, 80, 0]], "latency": {"intra_s": 1e-6}}`)
	if got, want := c.Pair(1, 2).Bandwidth, 10e9; got != want {
		t.Fatalf("Pair(1,2)=%v, want %v", got, want)
	}
	if got, want := c.Group([]int{0, 1, 2}).Bandwidth, 1e9; got != want {
		t.Fatalf("Group=%v, want %v (the slowest pair)", got, want)
	}
}

// Bad cluster files are refused with the field named (and its line).
func TestBadClusters(t *testing.T) {
	node := `{gpu: V100, gpus: 4, gpu_mem: 16GB, intra_bw_gbps: 100, inter_bw_gbps: 10}`
	tests := []struct {
		name, src, field string
	}{
		{"not yaml", "name: [", ""},
		{"empty", "", ""},
		{"no name", "nodes: [" + node + "]", "name"},
		{"no nodes", "name: x", "nodes"},
		{"unknown top field", "name: x\nnodes: [" + node + "]\nnodez: 1", "nodez"},
		{"unknown node field", "name: x\nnodes: [{gpu: V, gpus: 1, gpu_mem: 1GB, gpu_memory: 2}]", "nodes[0].gpu_memory"},
		{"negative memory", "name: x\nnodes: [{gpu: V, gpus: 1, gpu_mem: -5}]", "nodes[0].gpu_mem"},
		{"memory unit", "name: x\nnodes: [{gpu: V, gpus: 1, gpu_mem: 16XB}]", "nodes[0].gpu_mem"},
		{"zero gpus", "name: x\nnodes: [{gpu: V, gpus: 0, gpu_mem: 1GB}]", "nodes[0].gpus"},
		{"fractional gpus", "name: x\nnodes: [{gpu: V, gpus: 1.5, gpu_mem: 1GB}]", "nodes[0].gpus"},
		{"no device type", "name: x\nnodes: [{gpus: 1, gpu_mem: 1GB}]", "nodes[0].gpu"},
		{"missing intra", "name: x\nnodes: [{gpu: V, gpus: 2, gpu_mem: 1GB}]", "nodes[0].intra_bw"},
		{"missing inter", "name: x\nnodes: [{gpu: V, gpus: 1, gpu_mem: 1GB}, {gpu: V, gpus: 1, gpu_mem: 1GB}]", "nodes[0].inter_bw"},
		{"both units", "name: x\nnodes: [{gpu: V, gpus: 2, gpu_mem: 1GB, intra_bw: 1GB/s, intra_bw_gbps: 8}]", "nodes[0].intra_bw"},
		{"bad bandwidth", "name: x\nnodes: [{gpu: V, gpus: 2, gpu_mem: 1GB, intra_bw_gbps: -3}]", "nodes[0].intra_bw_gbps"},
		{"duplicate names", "name: x\nnodes: [{name: a, gpu: V, gpus: 1, gpu_mem: 1GB, inter_bw: 1e9}, {name: a, gpu: V, gpus: 1, gpu_mem: 1GB, inter_bw: 1e9}]", "nodes[1].name"},
		{"negative latency", "name: x\nnodes: [" + node + "]\nlatency: {intra_s: -1}", "latency.intra_s"},
		{"latency string", "name: x\nnodes: [" + node + "]\nlatency: {inter_s: fast}", "latency.inter_s"},
		{"bad contention", "name: x\nnodes: [" + node + "]\ncontention: {inter_node_shared_nic_flows: 0.5}", "contention.inter_node_shared_nic_flows"},
		{"bad rule", "name: x\nnodes: [" + node + "]\npair_bandwidth_rule: max", "pair_bandwidth_rule"},
		{"matrix rule without matrix", "name: x\nnodes: [" + node + "]\npair_bandwidth_rule: matrix", "pair_bandwidth_rule"},
		{"levels not growing", "name: x\nnodes: [" + node + "]\nlevels: [{name: a, nodes: 4}, {name: b, nodes: 4}]", "levels[1].nodes"},
		{"level without nodes", "name: x\nnodes: [" + node + "]\nlevels: [{name: a}]", "levels[0].nodes"},
		{"matrix rows", "name: x\nnodes: [{gpu: V, gpus: 2, gpu_mem: 1GB}]\nbandwidth_matrix: [[0, 1]]", "bandwidth_matrix"},
		{"asymmetric matrix", "name: x\nnodes: [{gpu: V, gpus: 2, gpu_mem: 1GB}]\nbandwidth_matrix: [[0, 1], [2, 0]]", "bandwidth_matrix[0][1]"},
		{"short later row", "name: x\nnodes: [{gpu: V, gpus: 2, gpu_mem: 1GB}]\nbandwidth_matrix: [[0, 1], []]", "bandwidth_matrix[1]"},
		{"duplicate key", "name: x\nname: y\nnodes: [" + node + "]", ""},
		{"count zero", "name: x\nnodes: [{gpu: V, gpus: 1, gpu_mem: 1GB, count: 0}]", "nodes[0].count"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := cluster.Parse([]byte(tt.src))
			if err == nil {
				t.Fatal("Parse succeeded, want an error")
			}
			if !errors.Is(err, chainplan.ErrUnsupported) {
				t.Fatalf("error %v does not wrap ErrUnsupported (bad input)", err)
			}
			var fe *cluster.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %T is not a *FieldError", err)
			}
			if tt.field != "" && fe.Field != tt.field {
				t.Fatalf("Field=%q, want %q (error: %v)", fe.Field, tt.field, err)
			}
			if tt.field != "" && !strings.Contains(err.Error(), tt.field) {
				t.Fatalf("message %q does not name %q", err, tt.field)
			}
		})
	}
}

func TestNew(t *testing.T) {
	_, err := cluster.New(cluster.Cluster{Name: "x", Nodes: []cluster.Node{{Name: "a", DeviceType: "V", Devices: 2, MemoryBytes: 1, NICs: 1}},
		Contention: cluster.Contention{Mode: cluster.ContentionNone}})
	var fe *cluster.FieldError
	if !errors.As(err, &fe) || fe.Field != "nodes[0].intra_bw" {
		t.Fatalf("New=%v, want a FieldError on nodes[0].intra_bw", err)
	}
	c, err := cluster.New(cluster.Cluster{Name: "x", Nodes: []cluster.Node{{Name: "a", DeviceType: "V", Devices: 2, MemoryBytes: 1, NICs: 1, IntraBandwidth: 4}},
		Contention: cluster.Contention{Mode: cluster.ContentionNone}})
	if err != nil || c.NumDevices() != 2 || c.Pair(0, 1).Bandwidth != 4 {
		t.Fatalf("New=%v, %v", c, err)
	}
}

// TestClusterFormatVersion: a cluster file of a version this chainplan does not read is
// refused by its tag (issue 33); a path that is no file is refused as one.
func TestClusterFormatVersion(t *testing.T) {
	_, err := cluster.Parse([]byte("format: chainplan.cluster/v9\nname: x\nnodes: [{gpu: V, gpus: 1, gpu_mem: 1GB}]\nnew_field: 1\n"))
	want := "format chainplan.cluster/v9 is not supported (this chainplan reads chainplan.cluster/v1)"
	if !errors.Is(err, chainplan.ErrSchemaVersion) || !errors.Is(err, chainplan.ErrUnsupported) || err == nil || err.Error() != want {
		t.Errorf("Parse(v9) = %v, want %q", err, want)
	}
	if _, err := cluster.Parse([]byte("format: chainplan.chain/v1\nname: x\n")); errors.Is(err, chainplan.ErrSchemaVersion) ||
		!errors.Is(err, chainplan.ErrUnsupported) {
		t.Errorf("Parse(another kind) = %v", err)
	}
	if _, err := cluster.ReadFile(t.TempDir()); !errors.Is(err, chainplan.ErrInputFile) {
		t.Errorf("ReadFile(a directory) = %v, want ErrInputFile", err)
	}
}
