package pipeline_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/internal/testchains"
	"github.com/chainplan/chainplan/planner/pipeline"
)

// TestCheckPlanning: the family's limits, which every pipeline planner checks first. The
// 40 000-stage chain of issue 33 builds its model (a plan of it replays and validates
// without these tables) but is refused to plan: one run of the partitioning DPs would take
// 6.4·10⁹ steps. Too many devices are told how many fit; a lower $CHAINPLAN_TABLE_LIMIT
// refuses the DPs' tables and, with checkpointing, rotor's table of the sub-chains.
func TestCheckPlanning(t *testing.T) {
	tests := []struct {
		name   string
		layers int
		opts   pipeplan.Options
		limit  string
		want   []string
	}{
		{"issue 33", testchains.LongStages, pipeplan.Options{GPUs: 8}, "",
			[]string{"pipeline: a chain of 40000 stages is too large", "one run of the partitioning DPs on 8 devices would take about 6.4e+09 steps",
				"over pipeline's limit of 3e+08", "merge consecutive layers"}},
		{"devices", 2000, pipeplan.Options{GPUs: 4096}, "",
			[]string{"a chain of 2000 stages is too large", "on 4096 devices", "use at most 149 devices (--gpus)"}},
		{"tables", 500, pipeplan.Options{GPUs: 64}, "1MiB",
			[]string{"the partitioning DPs' tables (501 layers × 65 devices) would take", "over the limit of 1.00 MiB",
				"use at most 62 devices"}},
		{"checkpoint", 3000, pipeplan.Options{GPUs: 2, Checkpoint: true}, "64MiB",
			[]string{"pipeline checkpointing: a chain of 3000 stages is too large", "the rotor table of its sub-chains",
				"no --checkpoint"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.limit != "" {
				t.Setenv(chainplan.TableLimitEnv, tt.limit)
			}
			tt.opts.Bandwidth = 12e9
			pr, err := pipeline.NewProblem(testchains.Long(tt.layers), tt.opts)
			if err != nil {
				t.Fatalf("NewProblem: %v", err)
			}
			n := testchains.Allocated(func() { err = pr.CheckPlanning() })
			var se *chainplan.SizeError
			if !errors.As(err, &se) || !errors.Is(err, chainplan.ErrUnsupported) {
				t.Fatalf("CheckPlanning: %v, want a *chainplan.SizeError", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not say %q", err, w)
				}
			}
			if n > 1<<20 {
				t.Errorf("allocated %d bytes to check", n)
			}
		})
	}
	pr, err := pipeline.NewProblem(testchains.Long(1000), pipeplan.Options{GPUs: 8, Bandwidth: 12e9, Checkpoint: true})
	if err != nil || pr.CheckPlanning() != nil {
		t.Fatalf("1000 layers on 8 devices with checkpointing: %v, %v", err, pr.CheckPlanning())
	}
}
