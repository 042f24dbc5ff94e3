package calibration_test

import (
	"errors"
	"math"
	"testing"

	"github.com/chainplan/chainplan/planner/calibration"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*(1+math.Abs(b)) }

// Pairs made by a known calibration give it back: the separate model when compute and
// communication scale differently, the shared one when they scale alike.
func TestFitRecoversKnownCalibration(t *testing.T) {
	parts := [][2]float64{{0.3, 0.1}, {0.2, 0.4}, {0.5, 0.05}, {0.1, 0.9}, {0.4, 0.3}, {0.25, 0.2}}
	for _, want := range []calibration.Calibration{
		{ComputeScale: 2.5, CommScale: 0.6, OverheadS: 0.8, Model: calibration.ModelSeparate},
		{ComputeScale: 1.7, CommScale: 1.7, OverheadS: 0.3, Model: calibration.ModelShared},
	} {
		var pairs []calibration.Pair
		for _, p := range parts {
			pairs = append(pairs, calibration.Pair{ComputeS: p[0], CommS: p[1], MeasuredS: want.Predict(p[0], p[1])})
		}
		got, err := calibration.Fit(pairs)
		if err != nil {
			t.Fatal(err)
		}
		if !near(got.ComputeScale, want.ComputeScale) || !near(got.CommScale, want.CommScale) ||
			!near(got.OverheadS, want.OverheadS) || got.Pairs != 6 || !near(got.LeaveOneOutAccuracy, 1) {
			t.Errorf("fit %+v, want %+v", got, want)
		}
		if want.Model == calibration.ModelSeparate && got.Model != want.Model {
			t.Errorf("model %s, want %s", got.Model, want.Model)
		}
	}
}

// Two pairs fit the shared model; a negative overhead is not allowed (non-negative least
// squares): predictions all above the measured times give a scale below 1 and no overhead.
func TestFitSmallAndConstrained(t *testing.T) {
	got, err := calibration.Fit([]calibration.Pair{{ComputeS: 1, CommS: 1, MeasuredS: 3}, {ComputeS: 2, CommS: 2, MeasuredS: 5}})
	if err != nil || got.Model != calibration.ModelShared || !near(got.ComputeScale, 1) || !near(got.OverheadS, 1) {
		t.Fatalf("fit %+v, %v", got, err)
	}
	got, err = calibration.Fit([]calibration.Pair{{ComputeS: 2, MeasuredS: 1}, {ComputeS: 4, MeasuredS: 2.1}, {ComputeS: 6, MeasuredS: 3.3}})
	if err != nil || got.OverheadS != 0 || got.ComputeScale >= 0.6 || got.ComputeScale <= 0.5 {
		t.Fatalf("fit %+v, %v", got, err)
	}
	if err := got.Check(); err != nil {
		t.Fatal(err)
	}
}

func TestFitErrorsAndCheck(t *testing.T) {
	if _, err := calibration.Fit([]calibration.Pair{{ComputeS: 1, MeasuredS: 1}}); !errors.Is(err, calibration.ErrTooFew) {
		t.Errorf("one pair: %v", err)
	}
	if _, err := calibration.Fit([]calibration.Pair{{ComputeS: 1, MeasuredS: 1}, {ComputeS: 1, MeasuredS: 0}}); err == nil {
		t.Errorf("a measured time of 0 was accepted")
	}
	// Measured times that fall as the predictions grow: no positive scale fits.
	_, err := calibration.Fit([]calibration.Pair{{ComputeS: 1, MeasuredS: 3}, {ComputeS: 2, MeasuredS: 2}, {ComputeS: 3, MeasuredS: 1}})
	if !errors.Is(err, calibration.ErrNoTrend) {
		t.Errorf("falling measured times: %v, want ErrNoTrend", err)
	}
	for _, c := range []calibration.Calibration{{ComputeScale: 0, CommScale: 1}, {ComputeScale: 1, CommScale: math.NaN()},
		{ComputeScale: 1, CommScale: 1, OverheadS: -1}} {
		if c.Check() == nil {
			t.Errorf("%+v passed Check", c)
		}
	}
}
