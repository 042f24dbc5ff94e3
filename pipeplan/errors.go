package pipeplan

import (
	"fmt"

	"github.com/chainplan/chainplan"
)

// InfeasibleError reports that an algorithm finds no plan within the memory per device,
// with the smallest memory at which it does (MinMemoryBytes), or, when LowerBound is set,
// a memory below which provably no plan of that kind exists (the smallest that works is
// not known). MinMemoryBytes 0 with LowerBound unset means no memory works. An algorithm
// whose success is not monotone in the memory (pipedream) may report a MinMemoryBytes
// below MemoryBytes.
type InfeasibleError struct {
	Algo           string
	MemoryBytes    int64
	MinMemoryBytes int64
	LowerBound     bool
}

func (e *InfeasibleError) Error() string {
	head := fmt.Sprintf("%s: no plan fits %s per device", e.Algo, bytesLabel(e.MemoryBytes))
	switch {
	case e.LowerBound:
		return fmt.Sprintf("%s; every plan needs at least %s per device (a lower bound)", head, bytesLabel(e.MinMemoryBytes))
	case e.MinMemoryBytes <= 0:
		return head + ", and no memory makes one fit"
	case e.MinMemoryBytes < e.MemoryBytes:
		return fmt.Sprintf("%s, though it finds one at %s, its smallest (its plans are not monotone in the memory)",
			head, bytesLabel(e.MinMemoryBytes))
	}
	return fmt.Sprintf("%s; the smallest memory per device that fits is %s", head, bytesLabel(e.MinMemoryBytes))
}

// Hint tells the user what to do.
func (e *InfeasibleError) Hint() string {
	switch {
	case e.MinMemoryBytes <= 0:
		return ""
	case e.MinMemoryBytes < e.MemoryBytes:
		return fmt.Sprintf("try --memory %d", e.MinMemoryBytes)
	}
	return fmt.Sprintf("raise --memory to at least %d", e.MinMemoryBytes)
}

// Unwrap makes errors.Is(err, chainplan.ErrInfeasible) true.
func (e *InfeasibleError) Unwrap() error { return chainplan.ErrInfeasible }

// SmallestFeasibleBytes is the smallest memory per device at which the algorithm finds a
// plan, MinMemoryBytes, or 0 when that is not known (a lower bound only) or no memory
// works (chainplan.Infeasibility, which the bindings pass on to Python's
// InfeasibleBudget.min_budget_bytes).
func (e *InfeasibleError) SmallestFeasibleBytes() int64 {
	if e.LowerBound {
		return 0
	}
	return max(e.MinMemoryBytes, 0)
}

// bytesLabel writes "512 B", or "3221225472 B (3.00 GiB)" for larger counts.
func bytesLabel(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%d B (%s)", n, chainplan.FormatBytes(n))
}
