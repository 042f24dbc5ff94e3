// Package stats holds the summaries the benchmark reports under bench/ share.
package stats

import "math"

// GeoMean returns the geometric mean of xs (NaN for none).
func GeoMean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	var s float64
	for _, x := range xs {
		s += math.Log(x)
	}
	return math.Exp(s / float64(len(xs)))
}
