package amp

import (
	"slices"
)

// Degrees is one point of the enumeration: the three parallel degrees and the
// micro-batch size (spec §3.3; gas = gbs/(dp·mbs)).
type Degrees struct {
	PP, DP, TMP, MBS int
}

// Enumerate returns the (pp, dp, tmp, mbs) of spec §5.3 step 2 for n devices, the smallest
// node holding perNode of them, a tensor degree of at most tmpMax, L blocks and a global
// batch gbs: tmp ∈ divisors(perNode) with tmp ≤ tmpMax, dp ∈ divisors(n/tmp),
// pp = n/(tmp·dp) ≤ L, and mbs ∈ divisors(gbs/dp) when dp divides gbs. The order is tmp,
// then dp, then mbs, ascending. On 4 nodes of 4 devices this gives 53 candidates at
// gbs = 32 and 65 at gbs = 64, AMP's counts (spec §3.7 item 9).
func Enumerate(n, perNode, tmpMax, L int, gbs int64) []Degrees {
	var out []Degrees
	for _, tmp := range divisors(perNode) {
		if tmp > tmpMax || n%tmp != 0 {
			continue
		}
		for _, dp := range divisors(n / tmp) {
			pp := n / (tmp * dp)
			if pp > L || gbs%int64(dp) != 0 {
				continue
			}
			for _, mbs := range divisors(gbs / int64(dp)) {
				out = append(out, Degrees{PP: pp, DP: dp, TMP: tmp, MBS: int(mbs)})
			}
		}
	}
	return out
}

// divisors returns the divisors of n ≥ 1 in increasing order.
func divisors[T int | int64](n T) []T {
	var out []T
	for d := T(1); d*d <= n; d++ {
		if n%d == 0 {
			out = append(out, d)
			if d*d != n {
				out = append(out, n/d)
			}
		}
	}
	slices.Sort(out)
	return out
}

// Placement names.
const (
	PlacementMegatron = "megatron"
	PlacementReversed = "reversed"
)

// place returns the devices of a candidate in Megatron/DeepSpeed rank order
// (rank = t + tmp·d + tmp·dp·j, spec §3.6 [REPO]) over the devices in order, or in reverse
// order for PlacementReversed (the last nodes host the first stages):
// dev[j][d·tmp+t] is the device of stage j, data replica d, tensor rank t.
func place(n int, g Degrees, placement string) [][]int {
	dev := make([][]int, g.PP)
	for j := range dev {
		dev[j] = make([]int, g.DP*g.TMP)
		for d := range g.DP {
			for t := range g.TMP {
				rank := t + g.TMP*d + g.TMP*g.DP*j
				if placement == PlacementReversed {
					rank = n - 1 - rank
				}
				dev[j][d*g.TMP+t] = rank
			}
		}
	}
	return dev
}

// UniformBoundaries is Megatron's layer-count assignment (spec §3.6): the blocks between
// head and L−tail (the repeated blocks: the transformer layers) split into pp equal runs,
// the earlier stages taking one more when they do not divide, the head's blocks joining
// the first stage and the tail's the last. AMP's pipe_gpt2 on GPT-2's 30 entries (24
// layers, head 2, tail 4) gives [0, 14, 30] for pp = 2 and [0, 8, 14, 20, 30] for pp = 4.
// It needs pp ≤ L − head − tail, else the blocks are split evenly without head or tail.
func UniformBoundaries(L, pp, head, tail int) []int {
	body := L - head - tail
	if pp > body || body < 1 {
		head, tail, body = 0, 0, L
	}
	bounds := make([]int, pp+1)
	each, extra := body/pp, body%pp
	at := head
	for j := 1; j < pp; j++ {
		at += each
		if j <= extra {
			at++
		}
		bounds[j] = at
	}
	bounds[pp] = L
	return bounds
}
