package madpipe

import "math"

// grid discretizes one of the DP's continuous state variables (spec §2.6): values are
// snapped up to the next multiple of step, so the DP over-estimates the special device's
// load and memory and the downstream delay, never under-estimates them. A zero step (the
// exact mode of the unit tests, or a zero range) keeps values as they are.
type grid struct {
	step float64
}

// newGrid returns the grid of n+1 equally spaced values over [0, hi] (n intervals), or
// the exact grid when n is 0 or hi is not positive.
func newGrid(hi float64, n int) grid {
	if n <= 0 || !(hi > 0) || math.IsInf(hi, 0) {
		return grid{}
	}
	return grid{step: hi / float64(n)}
}

// snap returns x rounded up to the grid and its index (the index is -1 on the exact
// grid). A relative tolerance keeps values that are grid points up to rounding on them.
// Indices may exceed n: the V grid keeps its step past Vmax (spec §2.6).
func (g grid) snap(x float64) (float64, int) {
	if g.step == 0 || x <= 0 {
		if g.step == 0 {
			return x, -1
		}
		return 0, 0
	}
	k := math.Ceil(x/g.step - 1e-9)
	return k * g.step, int(k)
}
