package amp_test

import (
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/workload"
)

// gpt2Model is examples/gpt2-medium.json, AMP's GPT-2 (24 layers, hidden 1024, sequence
// 1024, vocabulary 52256) as an analytic chain of one sample at 30 TFLOP/s (a V100's
// sustained fp16 rate): embedding, 24 layers, head.
func gpt2Model(tb testing.TB) *workload.Model {
	tb.Helper()
	c, err := chainplan.ReadChain("../../examples/gpt2-medium.json")
	if err != nil {
		tb.Fatal(err)
	}
	m, err := workload.FromChain(c, "gpt2-medium", 1, 4)
	if err != nil {
		tb.Fatal(err)
	}
	return m
}
