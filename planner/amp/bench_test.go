package amp_test

import (
	"testing"

	"github.com/chainplan/chainplan/planner/amp"
)

// BenchmarkSearch64 is search3d's target (issue 26): a 40-block model (examples/gpt-7b-40.json)
// on 64 devices (examples/clusters/a100-64.yaml) at gbs 512 in under 10 s, with and without
// the memory filter and with both cuts. docs/parallel-eval.md reports the same search.
func BenchmarkSearch64(b *testing.B) {
	m := exampleModel(b, "gpt-7b-40")
	cl := readCluster(b, "a100-64.yaml")
	for _, tt := range []struct {
		name string
		o    amp.Options
	}{
		{"memory=off", amp.Options{GlobalBatch: 512, MemoryCheck: amp.MemoryOff}},
		{"memory=rotor", amp.Options{GlobalBatch: 512}},
		{"memory=rotor/cut=best", amp.Options{GlobalBatch: 512, Cut: amp.CutBest}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := amp.Search(m, cl, tt.o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
