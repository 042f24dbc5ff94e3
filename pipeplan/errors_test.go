package pipeplan_test

import (
	"errors"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/pipeplan"
)

// TestInfeasibleErrorIsAnInfeasibility: the pipeline family's infeasibility tells its
// smallest memory per device through the interface every family shares, 0 when only a
// lower bound or nothing is known.
func TestInfeasibleErrorIsAnInfeasibility(t *testing.T) {
	for _, tt := range []struct {
		err  *pipeplan.InfeasibleError
		want int64
	}{
		{&pipeplan.InfeasibleError{Algo: "madpipe", MemoryBytes: 100, MinMemoryBytes: 300}, 300},
		{&pipeplan.InfeasibleError{Algo: "pipedream", MemoryBytes: 500, MinMemoryBytes: 300}, 300},
		{&pipeplan.InfeasibleError{Algo: "madpipe", MemoryBytes: 100, MinMemoryBytes: 300, LowerBound: true}, 0},
		{&pipeplan.InfeasibleError{Algo: "contiguous", MemoryBytes: 100}, 0},
	} {
		var inf chainplan.Infeasibility
		if !errors.As(error(tt.err), &inf) || inf.SmallestFeasibleBytes() != tt.want || !errors.Is(tt.err, chainplan.ErrInfeasible) {
			t.Errorf("%v: SmallestFeasibleBytes = %v, want %d", tt.err, inf, tt.want)
		}
	}
}
