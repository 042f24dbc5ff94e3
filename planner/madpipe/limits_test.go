package madpipe

import (
	"errors"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/internal/testchains"
)

// TestLimits: MadPipe refuses with a *chainplan.SizeError, before phase 1 runs, the
// 40 000-stage chain of issue 33 (the family's limit), a chain of more layers than its
// packed states hold (1100 layers: they used to share states, silently) and more devices
// than they hold; and phase 1 stops once its memoised states would pass the limit.
func TestLimits(t *testing.T) {
	tests := []struct {
		name   string
		layers int
		gpus   int
		limit  string
		want   []string
	}{
		{"issue 33", testchains.LongStages, 8, "", []string{"pipeline: a chain of 40000 stages is too large"}},
		{"layers", 1100, 2, "", []string{"madpipe: a chain of 1100 stages is too large",
			"phase 1's DP, whose packed states hold at most 1023 layers and 256 devices, would take 1100 layers", "--algo contiguous"}},
		{"devices", 300, 300, "", []string{"would take 300 devices, over madpipe's limit of 256"}},
		{"memo", 60, 4, "64KiB", []string{"madpipe: a chain of 60 stages is too large",
			"phase 1's memoised states on 4 devices would take more than", "over the limit of 64.00 KiB"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.limit != "" {
				t.Setenv(chainplan.TableLimitEnv, tt.limit)
			}
			pr := mustProblem(t, testchains.Long(tt.layers), pipeplan.Options{GPUs: tt.gpus, MemoryBytes: 64e9, Bandwidth: 12e9})
			if tt.name == "memo" { // the family's checks pass: phase 1 runs and stops
				if err := pr.CheckPlanning(); err != nil {
					t.Fatal(err)
				}
			}
			for name, f := range map[string]func() error{
				"Solve":     func() error { _, err := Solve(pr, Options{}); return err },
				"MinMemory": func() error { _, err := MinMemory(pr.WithMemory(1), Options{}); return err },
				"phase1":    func() error { _, err := phase1(pr, false); return err },
			} {
				var err error
				n := testchains.Allocated(func() { err = f() })
				var se *chainplan.SizeError
				if !errors.As(err, &se) || !errors.Is(err, chainplan.ErrUnsupported) || n > testchains.MaxAllocBytes {
					t.Fatalf("%s: %v after %d bytes, want a *chainplan.SizeError", name, err, n)
				}
				for _, w := range tt.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("%s: %q does not say %q", name, err, w)
					}
				}
			}
		})
	}
}
