package amp_test

import (
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/workload"
)

// gpt2Model is examples/gpt2-medium.json, AMP's GPT-2 (24 layers, hidden 1024, sequence
// 1024, vocabulary 52256) as an analytic chain of one sample at 30 TFLOP/s (a V100's
// sustained fp16 rate): embedding, 24 layers, head.
func gpt2Model(tb testing.TB) *workload.Model { return exampleModel(tb, "gpt2-medium") }

// exampleModel reads examples/NAME.json, a chain of one sample in fp32.
func exampleModel(tb testing.TB, name string) *workload.Model {
	tb.Helper()
	c, err := chainplan.ReadChain("../../examples/" + name + ".json")
	if err != nil {
		tb.Fatal(err)
	}
	m, err := workload.FromChain(c, name, 1, 4)
	if err != nil {
		tb.Fatal(err)
	}
	return m
}
