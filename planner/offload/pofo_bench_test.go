package offload

import (
	"fmt"
	"testing"
)

// BenchmarkPOFO measures SolvePOFO (its DP, and unless that reaches Σ(u_F+u_B) the second DP
// and the fallbacks; reconstruction and replays included) at the default discretization.
// At the benchmark chain's bandwidth the first DP reaches Σ; "slow" divides the bandwidth by
// 4, where every candidate runs (AUTOCAPPER wins on the 50-stage chain). Target on the 2-core
// reference machine: 50 stages under 5 s; the thesis reports seconds to a few minutes
// (spec §6.5, C4-10).
func BenchmarkPOFO(b *testing.B) {
	for _, bc := range []struct {
		l    int
		slow bool
	}{{50, false}, {50, true}, {100, false}} {
		name := fmt.Sprintf("stages=%d", bc.l)
		if bc.slow {
			name += ",slow"
		}
		b.Run(name, func(b *testing.B) {
			c, budget, beta := benchChain(bc.l)
			if bc.slow {
				beta /= 4
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := SolvePOFO(c, budget, Options{BandwidthBytesPerS: beta}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
