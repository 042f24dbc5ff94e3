package cluster_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/cluster"
)

// FuzzParse feeds arbitrary bytes to Parse: it never panics, refuses with a *FieldError
// (bad input) or, for a format tag it does not read, a *chainplan.FormatError, both
// wrapping ErrUnsupported; and whatever it accepts has devices and reads back from its canonical form.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("../../examples/clusters/*.yaml")
	for _, p := range files {
		if filepath.Base(p) == "abci.yaml" {
			continue // 1,088 nodes: each run would cost milliseconds; TestExampleClusters reads it
		}
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"name": "j", "nodes": [{"gpu": "X", "gpus": 3, "gpu_mem": 1}], "bandwidth_matrix": [[0,1,1],[1,0,1],[1,1,0]]}`))
	f.Add([]byte("name: x\nnodes: [{gpu: V, gpus: 2, gpu_mem: 16XB}]"))
	f.Add([]byte("format: 0\nname: x\nnodes: [{gpu: V, gpus: 2, gpu_mem: 16e9}]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := cluster.Parse(data)
		if err != nil {
			var fe *cluster.FieldError
			var fmtErr *chainplan.FormatError
			if !(errors.As(err, &fe) || errors.As(err, &fmtErr)) || !errors.Is(err, chainplan.ErrUnsupported) {
				t.Fatalf("error %T %v is neither a FieldError nor a FormatError wrapping ErrUnsupported", err, err)
			}
			return
		}
		if c.NumDevices() < 1 {
			t.Fatalf("accepted a cluster without devices")
		}
		if len(c.Nodes) > 64 {
			return // the round trip of thousands of nodes is TestExampleClusters' (abci.yaml)
		}
		back, err := cluster.Parse(c.Canonical())
		if err != nil || string(back.Canonical()) != string(c.Canonical()) {
			t.Fatalf("canonical form does not read back: %v", err)
		}
		_ = c.Group(cluster.Range(0, min(c.NumDevices(), 64)))
	})
}
