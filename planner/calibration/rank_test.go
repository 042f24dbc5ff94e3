package calibration_test

import (
	"math"
	"testing"

	"github.com/chainplan/chainplan/planner/calibration"
)

// Spearman's ρ: perfect agreement, perfect reversal, and ties at their average rank
// (checked against scipy.stats.spearmanr's values for the same lists).
func TestSpearman(t *testing.T) {
	tests := []struct {
		x, y []float64
		want float64
	}{
		{[]float64{1, 2, 3, 4}, []float64{10, 20, 30, 40}, 1},
		{[]float64{1, 2, 3, 4}, []float64{4, 3, 2, 1}, -1},
		{[]float64{1, 2, 3, 4, 5}, []float64{2, 1, 4, 3, 5}, 0.8},
		// ranks of y with a tie: 1, 2.5, 2.5, 4 → ρ = 0.9486832980505138
		{[]float64{1, 2, 3, 4}, []float64{1, 5, 5, 9}, 0.9486832980505138},
	}
	for _, tt := range tests {
		if got := calibration.Spearman(tt.x, tt.y); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("Spearman(%v, %v) = %v, want %v", tt.x, tt.y, got, tt.want)
		}
	}
}
