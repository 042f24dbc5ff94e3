package profile

import "testing"

func TestMedians(t *testing.T) {
	tests := []struct {
		f     []float64
		wantF float64
		n     []int64
		wantN int64
	}{
		{[]float64{3}, 3, []int64{3}, 3},
		{[]float64{3, 1, 2}, 2, []int64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5, []int64{4, 1, 3, 2}, 3}, // upper median of sizes
		{[]float64{1, 1, 1, 100}, 1, []int64{1, 1, 100, 100}, 100},
	}
	for _, tt := range tests {
		if got := medianFloat(append([]float64(nil), tt.f...)); got != tt.wantF {
			t.Errorf("medianFloat(%v)=%v, want %v", tt.f, got, tt.wantF)
		}
		if got := upperMedian(append([]int64(nil), tt.n...)); got != tt.wantN {
			t.Errorf("upperMedian(%v)=%v, want %v", tt.n, got, tt.wantN)
		}
	}
}
