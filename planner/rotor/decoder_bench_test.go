package rotor

import (
	"fmt"
	"testing"

	"github.com/chainplan/chainplan"
)

// decoderChain returns the chain of a decoder of the given number of pre-norm blocks, as
// the graph split gives it (each block cut at its residual addition: an attention half and
// an MLP half), with the sizes and times of a 1.3B-parameter-like model at batch 8 and 1024
// tokens in fp32 (width 2048: a 64 MiB residual stream). Each half has three
// operation-level options, as the profiler measures them on such blocks: keep the matrix
// products only, keep the products and the normalisation, keep the input only.
func decoderChain(blocks int) *chainplan.Chain {
	const mib = int64(1 << 20)
	a := 64 * mib // the residual stream
	c := &chainplan.Chain{Format: chainplan.ChainFormatV2, InputBytes: 64 << 10}
	add := func(name string, uF, uB float64, abar, oF, oB int64, opts []chainplan.StageOption) {
		c.Stages = append(c.Stages, chainplan.Stage{
			Name: name, FwdTime: uF, BwdTime: uB, OutBytes: a, SavedBytes: abar,
			FwdTmpBytes: oF, BwdTmpBytes: oB, SavesInput: chainplan.Bool(true),
			SavesOutput: chainplan.Bool(false), RecomputeTime: chainplan.Float(uF * 0.9),
			RecomputeTmpBytes: chainplan.Int(oF), Options: opts,
		})
	}
	add("embed", 0.002, 0.004, a, 0, a, nil)
	for b := range blocks {
		attn := []chainplan.StageOption{
			{SavedBytes: 4 * a, FwdTmpBytes: a, RecomputeTime: 0.004, Keep: []int{3, 5, 9}},
			{SavedBytes: 5 * a, FwdTmpBytes: a, RecomputeTime: 0.002, Keep: []int{1, 3, 5, 9}},
			{SavedBytes: a, FwdTmpBytes: 2 * a, RecomputeTime: 0.028, Keep: []int{}},
		}
		mlp := []chainplan.StageOption{
			{SavedBytes: 5 * a, FwdTmpBytes: 4 * a, RecomputeTime: 0.003, Keep: []int{3, 7}},
			{SavedBytes: 6 * a, FwdTmpBytes: 4 * a, RecomputeTime: 0.001, Keep: []int{1, 3, 7}},
			{SavedBytes: a, FwdTmpBytes: 4 * a, RecomputeTime: 0.034, Keep: []int{}},
		}
		add(fmt.Sprintf("layers.%d.attn", b), 0.030, 0.060, 10*a, 2*a, 4*a, attn)
		add(fmt.Sprintf("layers.%d.mlp", b), 0.036, 0.072, 13*a, 4*a, 4*a, mlp)
	}
	add("norm", 0.001, 0.002, 2*a, 0, a, nil)
	add("lm_head", 0.050, 0.100, 16*a, 16*a, 16*a, nil)
	c.Loss = chainplan.Loss{FwdTime: 0.010, BwdTime: 0.010, FwdTmpBytes: 16 * a, BwdTmpBytes: 16 * a}
	return c
}

// BenchmarkDecoder48 measures planning a 48-block decoder (99 stages with options), as
// chainplan.plan does it: rotor and rotor-ops at a budget halfway between the smallest
// and store-all, and the smallest-budget search. Target on the 2-core reference machine:
// under 2 s per plan (docs/rotor.md, "Planning time").
func BenchmarkDecoder48(b *testing.B) { benchmarkDecoder(b, 48) }

// BenchmarkDecoder80 is the same at 80 blocks (163 stages with options), the size issue
// 36's planning-time target names: under 2 s per plan with options.
func BenchmarkDecoder80(b *testing.B) { benchmarkDecoder(b, 80) }

func benchmarkDecoder(b *testing.B, blocks int) {
	c := decoderChain(blocks)
	if err := c.Validate(); err != nil {
		b.Fatal(err)
	}
	for _, ops := range []bool{false, true} {
		opts := Options{StageOptions: ops}
		lo, err := MinBudget(c, opts)
		if err != nil {
			b.Fatal(err)
		}
		budget := (lo + StoreAllPeak(c)) / 2
		b.Run(fmt.Sprintf("solve/options=%v", ops), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := Solve(c, budget, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("minbudget/options=%v", ops), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := MinBudget(c, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
