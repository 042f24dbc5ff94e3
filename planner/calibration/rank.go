package calibration

import (
	"math"
	"slices"
)

// Accuracy is the mean of 1 − |predicted − measured| / measured (ParaDL's accuracy, spec
// §5.5) over pairs of equal length ≥ 1.
func Accuracy(predicted, measured []float64) float64 {
	var s float64
	for i := range predicted {
		s += 1 - math.Abs(predicted[i]-measured[i])/measured[i]
	}
	return s / float64(len(predicted))
}

// Spearman returns Spearman's rank correlation of x and y (same length ≥ 2): the Pearson
// correlation of their ranks, ties given their average rank; NaN when either is constant.
func Spearman(x, y []float64) float64 {
	rx, ry := ranks(x), ranks(y)
	mean := func(v []float64) float64 {
		var s float64
		for _, a := range v {
			s += a
		}
		return s / float64(len(v))
	}
	mx, my := mean(rx), mean(ry)
	var sxy, sxx, syy float64
	for i := range rx {
		dx, dy := rx[i]-mx, ry[i]-my
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	return sxy / math.Sqrt(sxx*syy)
}

// ranks returns the 1-based ranks of v, ties averaged.
func ranks(v []float64) []float64 {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case v[a] < v[b]:
			return -1
		case v[a] > v[b]:
			return 1
		}
		return 0
	})
	out := make([]float64, len(v))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && v[idx[j+1]] == v[idx[i]] {
			j++
		}
		r := float64(i+j)/2 + 1
		for k := i; k <= j; k++ {
			out[idx[k]] = r
		}
		i = j + 1
	}
	return out
}
