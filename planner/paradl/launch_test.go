package paradl_test

import (
	"testing"

	"github.com/chainplan/chainplan/planner/paradl"
)

// Every launchable candidate carries the mesh, micro-batch, cuts and checkpointing that
// parallelize needs (issue 34), consistent with its strategy; spatial ones carry none.
func TestAdviseLaunchShape(t *testing.T) {
	m := profiled(t)
	a := mustAdvise(t, m, cluster16(t, 64<<30), paradl.Options{DatasetSize: 100_000, BatchPerDevice: 8})
	seen := map[paradl.Strategy]bool{}
	for _, c := range a.Candidates {
		sh := c.Launch
		switch c.Strategy {
		case paradl.Spatial, paradl.DataSpatial, paradl.DataOffload:
			if sh != nil {
				t.Errorf("%s p=%d: shape %+v, want none (parallelize cannot launch it)", c.Strategy, c.Devices, sh)
			}
			continue
		}
		if sh == nil {
			if c.Feasible {
				t.Errorf("%s p=%d: feasible but no shape", c.Strategy, c.Devices)
			}
			continue
		}
		seen[c.Strategy] = true
		if err := sh.Check(m.L()); err != nil {
			t.Errorf("%s p=%d: %v", c.Strategy, c.Devices, err)
		}
		if sh.Mesh.Size() != c.Devices {
			t.Errorf("%s p=%d: mesh %+v", c.Strategy, c.Devices, sh.Mesh)
		}
		if got := int64(sh.Mesh.DP * sh.Microbatch * sh.Microbatches); got != c.GlobalBatch {
			t.Errorf("%s p=%d: dp·microbatch·microbatches = %d, want the global batch %d", c.Strategy, c.Devices, got, c.GlobalBatch)
		}
		switch c.Strategy {
		case paradl.Data:
			if sh.Mesh.DP != c.Devices {
				t.Errorf("data p=%d: mesh %+v", c.Devices, sh.Mesh)
			}
		case paradl.Pipeline, paradl.Layer:
			if sh.Mesh.PP != c.Devices || len(sh.Cuts) != len(c.Groups)-1 || len(sh.Cuts) > 0 && sh.Cuts[0] != c.Groups[0][1] {
				t.Errorf("%s p=%d: shape %+v, groups %v", c.Strategy, c.Devices, sh, c.Groups)
			}
			if c.Strategy == paradl.Pipeline && sh.Microbatches != c.Segments {
				t.Errorf("pipeline p=%d: %d micro-batches, %d segments", c.Devices, sh.Microbatches, c.Segments)
			}
		case paradl.Filter, paradl.Channel:
			if sh.Mesh.TP != c.Devices {
				t.Errorf("%s p=%d: mesh %+v", c.Strategy, c.Devices, sh.Mesh)
			}
		case paradl.DataFilter:
			if sh.Mesh.DP != c.DataDegree || sh.Mesh.TP != c.SplitDegree {
				t.Errorf("df p=%d: mesh %+v, degrees %d × %d", c.Devices, sh.Mesh, c.DataDegree, c.SplitDegree)
			}
		}
	}
	for _, s := range []paradl.Strategy{paradl.Serial, paradl.Data, paradl.Layer, paradl.Pipeline, paradl.Filter, paradl.DataFilter} {
		if !seen[s] {
			t.Errorf("no %s candidate with a shape", s)
		}
	}
}

// data+checkpointing carries its rotor budget as the stage's checkpoint.
func TestAdviseLaunchCheckpoint(t *testing.T) {
	m := profiled(t)
	a := mustAdvise(t, m, cluster16(t, 250e6), paradl.Options{DatasetSize: 10_000, BatchPerDevice: 64, Devices: []int{4},
		Strategies: []paradl.Strategy{paradl.DataCheckpoint}})
	n := 0
	for _, c := range a.Candidates {
		if c.Saver == nil || c.Launch == nil {
			continue
		}
		n++
		if c.Launch.Checkpoint[0].BudgetBytes != c.Saver.BudgetBytes || c.Saver.BudgetBytes <= 0 {
			t.Errorf("p=%d: checkpoint %+v, saver budget %d", c.Devices, c.Launch.Checkpoint, c.Saver.BudgetBytes)
		}
	}
	if n == 0 {
		t.Fatalf("no data+checkpointing candidate with a saver: %+v", a.Candidates)
	}
}
