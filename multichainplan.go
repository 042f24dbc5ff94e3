package chainplan

import (
	"fmt"
	"slices"
)

// MultichainPlan is the multichain section of a plan for K towers joined at the loss
// (docs/formats-schedule.md, "Multichain plans"). Its sequence's operations name their
// branch: F_all, F_ck, F_none and B of branch j's stages, the joint loss as F_all and B of
// branch 0, stage 0, and FreeGrad of the branches whose input gradient is not kept.
type MultichainPlan struct {
	// Branches is K, the number of towers.
	Branches int `json:"branches"`
	// KeepInputGrad is b, one value per branch: whether δ_0 stays after the plan.
	KeepInputGrad []bool `json:"keep_input_grad"`
	// UnitBytes is the slot of the uniform-size dynamic program (s of specs/multichain.md
	// §9.2, the largest activation) and ReserveBytes the memory it keeps aside for the
	// transients the slot model ignores (R); the plan's Slots are then
	// floor((budget − R) / s). Both are 0 in a plan of the linearized chain.
	UnitBytes    int64 `json:"unit_bytes"`
	ReserveBytes int64 `json:"reserve_bytes"`
	// Decisions are the canonical decisions of the dynamic program's plan (spec §4.2): in
	// order, replicate the head of Branch and run Steps forwards on it.
	Decisions []Decision `json:"decisions,omitempty"`
	// Order is the concatenation order of the branches (1-based) of a plan of the
	// linearized chain (spec §6, H1).
	Order []int `json:"order,omitempty"`
}

// Decision is one canonical decision (specs/multichain.md §4.2): replicate the current head
// of Branch (1-based) and forward it Steps stages; its backward segment runs after the
// loss, in reverse decision order.
type Decision struct {
	Branch int `json:"branch"`
	Steps  int `json:"steps"`
}

// check verifies that the section is consistent and that every operation of seq is well
// formed for K branches. Whether the sequence is valid for a bundle is the simulator's
// business.
func (m *MultichainPlan) check(seq []Op) error {
	k := m.Branches
	if k < 1 {
		return fmt.Errorf("multichain: branches %d (want at least 1)", k)
	}
	if len(m.KeepInputGrad) != k {
		return fmt.Errorf("multichain: keep_input_grad has %d values for %d branches", len(m.KeepInputGrad), k)
	}
	for i, d := range m.Decisions {
		if d.Branch < 1 || d.Branch > k || d.Steps < 1 {
			return fmt.Errorf("multichain: decisions[%d]: branch %d, steps %d (want a branch in 1..%d and steps ≥ 1)",
				i, d.Branch, d.Steps, k)
		}
	}
	if len(m.Order) > 0 {
		sorted := slices.Sorted(slices.Values(m.Order))
		for i, b := range sorted {
			if b != i+1 {
				return fmt.Errorf("multichain: order %v is not a permutation of the branches 1..%d", m.Order, k)
			}
		}
		if len(sorted) != k {
			return fmt.Errorf("multichain: order %v is not a permutation of the branches 1..%d", m.Order, k)
		}
	}
	for i, o := range seq {
		bad := func(msg string, args ...any) error {
			return fmt.Errorf("sequence[%d] (%s): %s", i, o, fmt.Sprintf(msg, args...))
		}
		switch {
		case o.Kind != FreeGrad && !o.Kind.Valid():
			return bad("unknown op %q (want F_all, F_ck, F_none, B or free_grad)", o.Kind)
		case o.Branch < 0 || o.Branch > k:
			return bad("branch %d out of range 0..%d (0 is the joint loss)", o.Branch, k)
		case o.Kind == FreeGrad && (o.Branch == 0 || o.Stage != 0):
			return bad("free_grad names a branch 1..%d and stage 0", k)
		case o.Kind == FreeGrad:
		case o.Branch == 0 && (o.Stage != 0 || (o.Kind != FAll && o.Kind != B)):
			return bad("the joint loss is F_all or B of branch 0, stage 0")
		case o.Branch > 0 && o.Stage < 1:
			return bad("stage %d (stages of a branch are numbered from 1)", o.Stage)
		}
	}
	return nil
}
