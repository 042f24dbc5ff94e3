package launch

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Mesh is a DeviceMesh's shape: pipeline, data and tensor degrees (world size pp·dp·tp).
type Mesh struct {
	PP int `json:"pp"`
	DP int `json:"dp"`
	TP int `json:"tp"`
}

// Size is the world size the mesh needs.
func (m Mesh) Size() int { return m.PP * m.DP * m.TP }

// Shape is what a candidate carries for parallelize. Field names are the launcher's
// contract (docs/formats.md): do not rename them.
type Shape struct {
	Mesh Mesh `json:"mesh"`
	// Microbatch is the samples of one micro-batch on one data-parallel replica;
	// Microbatches how many run per iteration (gradient accumulation, or the pipeline's
	// micro-batches). The global batch is DP·Microbatch·Microbatches.
	Microbatch   int `json:"microbatch"`
	Microbatches int `json:"microbatches"`
	// Cuts are the stage boundaries as layer numbers of the chain: the last layer
	// (1-based, inclusive, as amp.Stage.LastLayer) of each stage but the last, PP−1
	// increasing numbers (empty for one stage). Equally, 0-based, the first layer of each
	// stage but the first.
	Cuts []int `json:"cuts"`
	// Checkpoint is each stage's activation checkpointing (len = PP).
	Checkpoint []Checkpoint `json:"checkpoint"`
}

// Checkpoint is one stage's checkpointing: a rotor activation budget in bytes for one
// micro-batch, or none (BudgetBytes 0). JSON: the budget as a number, or "none".
type Checkpoint struct {
	BudgetBytes int64
}

// None is the checkpointing of a stage that stores every activation.
var None = Checkpoint{}

// MarshalJSON writes the budget, or "none".
func (c Checkpoint) MarshalJSON() ([]byte, error) {
	if c.BudgetBytes == 0 {
		return []byte(`"none"`), nil
	}
	return json.Marshal(c.BudgetBytes)
}

// UnmarshalJSON reads a positive budget in bytes or "none".
func (c *Checkpoint) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte(`"none"`)) {
		*c = None
		return nil
	}
	var v int64
	if err := json.Unmarshal(b, &v); err != nil || v <= 0 {
		return fmt.Errorf("checkpoint: want a positive budget in bytes or \"none\", got %s", b)
	}
	c.BudgetBytes = v
	return nil
}

// Check reports the first inconsistency of s for a chain of layers layers: degrees below
// 1, a micro-batch or count below 1, cuts that are not PP−1 increasing layers within
// 1..layers−1, or a checkpoint list of another length than PP.
func (s *Shape) Check(layers int) error {
	m := s.Mesh
	switch {
	case m.PP < 1 || m.DP < 1 || m.TP < 1:
		return fmt.Errorf("mesh: want pp, dp, tp ≥ 1, got %+v", m)
	case s.Microbatch < 1:
		return fmt.Errorf("microbatch: want ≥ 1 sample, got %d", s.Microbatch)
	case s.Microbatches < 1:
		return fmt.Errorf("microbatches: want ≥ 1, got %d", s.Microbatches)
	case len(s.Cuts) != m.PP-1:
		return fmt.Errorf("cuts: want pp−1 = %d layers, got %v", m.PP-1, s.Cuts)
	case len(s.Checkpoint) != m.PP:
		return fmt.Errorf("checkpoint: want one entry per stage (%d), got %d", m.PP, len(s.Checkpoint))
	}
	prev := 0
	for _, c := range s.Cuts {
		if c <= prev || c >= layers {
			return fmt.Errorf("cuts: want increasing layers within 1..%d (the chain's layers but the last), got %v", layers-1, s.Cuts)
		}
		prev = c
	}
	return nil
}
