package offload

import (
	"fmt"
	"math"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/discretize"
)

// Options configures the offloading planners.
type Options struct {
	// BandwidthBytesPerS is β, the GPU↔host bandwidth in bytes per time unit of the
	// chain (bytes per second for profiled chains). It must be positive and finite.
	BandwidthBytesPerS float64
	// Slots is the number of memory slots of the discretization (unit =
	// max(1, floor(budget/slots))). Zero means the algorithm's default (POFOSlots
	// for POFO, DynProgSlots for DYNPROG, rotor's default for the heuristics'
	// rematerialization); a negative value means exact bytes (unit 1), which only small
	// budgets can afford.
	Slots int64
	// Model is the memory model of the returned plan's makespan, peak and timing; the
	// zero value means Fractional, the model the dynamic programs optimize. Both
	// models' estimates are in every plan.
	Model chainplan.MemoryModel
}

// SlotsFor returns the slots for a budget: def when Slots is 0, the budget itself (unit 1)
// when Slots is negative.
func (o Options) SlotsFor(budget, def int64) int64 {
	return discretize.Slots(o.Slots, budget, def)
}

// MemoryModel returns the plan's memory model, Fractional when Model is unset.
func (o Options) MemoryModel() chainplan.MemoryModel {
	if o.Model == "" {
		return chainplan.Fractional
	}
	return o.Model
}

// Check validates the options, the chain and the budget. Errors: ErrInvalidChain,
// ErrUnsupported for a bad bandwidth, memory model or budget.
func (o Options) Check(c *chainplan.Chain, budgetBytes int64) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if b := o.BandwidthBytesPerS; math.IsNaN(b) || math.IsInf(b, 0) || b <= 0 {
		return fmt.Errorf("%w: the bandwidth must be a positive, finite number of bytes per second (got %v)",
			chainplan.ErrUnsupported, b)
	}
	if !o.MemoryModel().Valid() {
		return fmt.Errorf("%w: unknown memory model %q (want fractional or integral)", chainplan.ErrUnsupported, o.Model)
	}
	if budgetBytes <= 0 {
		return fmt.Errorf("%w: the budget must be positive (got %d bytes)", chainplan.ErrUnsupported, budgetBytes)
	}
	return nil
}
