// Package calibration fits an advisor's cost model to measured runs (issue 34): from
// recorded (predicted, measured) iteration times of candidates on one cluster, a scale of
// the predicted computation, a scale of the predicted communication (1 / the links'
// efficiency) and a fixed per-iteration overhead, by least squares on the relative error;
// search3d applies it to later predictions (amp.Options.Calibration).
//
// A prediction splits into ComputeS (the chain's forward and backward times, pipeline
// bubbles and recomputation included) and CommS (point-to-point, tensor-parallel and
// data-parallel transfers); the calibrated time is
//
//	ComputeScale·ComputeS + CommScale·CommS + OverheadS.
//
// Fit tries two models and keeps the one whose leave-one-out error over the pairs is the
// smaller: one scale for both parts (ranks stay as predicted), or a scale per part (needs
// at least 4 pairs). Coefficients are non-negative (exact active-set search: at most 3
// unknowns).
package calibration

import (
	"errors"
	"fmt"
	"math"
)

// Format is the tag of a calibration document (docs/formats.md, "Calibration").
const Format = "chainplan.calibration/v1"

// The fitted models (Calibration.Model).
const (
	ModelShared   = "shared"   // ComputeScale = CommScale
	ModelSeparate = "separate" // a scale per part
)

// Calibration is what Fit returns and search3d applies. The zero value is not valid; use
// Identity for none.
type Calibration struct {
	Format       string  `json:"format,omitempty"`
	Cluster      string  `json:"cluster,omitempty"`
	ComputeScale float64 `json:"compute_scale"`
	CommScale    float64 `json:"comm_scale"`
	OverheadS    float64 `json:"overhead_s"`
	// Model is ModelShared or ModelSeparate; Pairs the measured candidates fitted;
	// LeaveOneOutAccuracy the mean 1 − |p − m|/m of each pair predicted by a fit on the
	// others (0 with fewer than 3 pairs).
	Model               string  `json:"model,omitempty"`
	Pairs               int     `json:"pairs,omitempty"`
	LeaveOneOutAccuracy float64 `json:"leave_one_out_accuracy,omitempty"`
}

// Identity changes no prediction.
var Identity = Calibration{ComputeScale: 1, CommScale: 1}

// Check reports a scale that is not positive and finite, or a negative overhead.
func (c *Calibration) Check() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"compute_scale", c.ComputeScale}, {"comm_scale", c.CommScale}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v <= 0 {
			return fmt.Errorf("calibration: %s must be a positive number (got %v)", f.name, f.v)
		}
	}
	if math.IsNaN(c.OverheadS) || math.IsInf(c.OverheadS, 0) || c.OverheadS < 0 {
		return fmt.Errorf("calibration: overhead_s must be ≥ 0 seconds (got %v)", c.OverheadS)
	}
	return nil
}

// Predict is the calibrated time of a prediction split into computation and communication.
func (c *Calibration) Predict(computeS, commS float64) float64 {
	return c.ComputeScale*computeS + c.CommScale*commS + c.OverheadS
}

// Pair is a measured candidate: its predicted computation and communication, and the
// measured iteration time (all seconds).
type Pair struct {
	ComputeS  float64 `json:"compute_s"`
	CommS     float64 `json:"comm_s"`
	MeasuredS float64 `json:"measured_s"`
}

// ErrTooFew is returned by Fit with fewer than 2 pairs.
var ErrTooFew = errors.New("calibration: at least 2 measured candidates are needed to fit a scale and an overhead")

// ErrNoTrend is returned by Fit when the measured times do not grow with the predictions.
var ErrNoTrend = errors.New("calibration: no trend to fit")

// Fit returns the calibration of pairs (see the package comment). Errors: ErrTooFew;
// ErrNoTrend (wrapped); a pair with a negative part or a measured time that is not
// positive.
func Fit(pairs []Pair) (Calibration, error) {
	if len(pairs) < 2 {
		return Calibration{}, ErrTooFew
	}
	for i, p := range pairs {
		if !(p.ComputeS >= 0) || !(p.CommS >= 0) || !(p.MeasuredS > 0) || math.IsInf(p.ComputeS+p.CommS+p.MeasuredS, 0) {
			return Calibration{}, fmt.Errorf("calibration: pair %d: want parts ≥ 0 and a measured time > 0, got %+v", i, p)
		}
	}
	models := []string{ModelShared}
	if len(pairs) >= 4 {
		models = append(models, ModelSeparate)
	}
	var best Calibration
	bestLOO := math.Inf(-1)
	for _, m := range models {
		c, err := fitModel(pairs, m)
		if err != nil {
			continue
		}
		loo := math.Inf(-1)
		if len(pairs) >= 3 {
			loo = leaveOneOut(pairs, m)
		}
		if best.Model == "" || loo > bestLOO {
			best, bestLOO = c, loo
		}
	}
	if !math.IsInf(bestLOO, -1) {
		best.LeaveOneOutAccuracy = bestLOO
	}
	if best.Model == "" {
		return Calibration{}, fmt.Errorf("%w: over these %d measured candidates the measured times do not grow with the "+
			"predicted ones (the best non-negative fit scales the predictions by 0); measure candidates of more varied "+
			"predicted times, or longer runs if the machine is shared", ErrNoTrend, len(pairs))
	}
	best.Format, best.Pairs = Format, len(pairs)
	return best, nil
}

// leaveOneOut returns the mean accuracy of each pair predicted by model fitted on the
// others (−Inf when a fold has no fit).
func leaveOneOut(pairs []Pair, model string) float64 {
	var sum float64
	rest := make([]Pair, 0, len(pairs)-1)
	for i, p := range pairs {
		rest = append(append(rest[:0], pairs[:i]...), pairs[i+1:]...)
		c, err := fitModel(rest, model)
		if err != nil {
			return math.Inf(-1)
		}
		sum += 1 - math.Abs(c.Predict(p.ComputeS, p.CommS)-p.MeasuredS)/p.MeasuredS
	}
	return sum / float64(len(pairs))
}

// fitModel fits one model by non-negative least squares on the relative error: rows
// weighted by 1/measured.
func fitModel(pairs []Pair, model string) (Calibration, error) {
	rows := make([][]float64, len(pairs))
	y := make([]float64, len(pairs))
	for i, p := range pairs {
		w := 1 / p.MeasuredS
		if model == ModelShared {
			rows[i] = []float64{w * (p.ComputeS + p.CommS), w}
		} else {
			rows[i] = []float64{w * p.ComputeS, w * p.CommS, w}
		}
		y[i] = 1
	}
	x, ok := nnls(rows, y)
	if !ok {
		return Calibration{}, errors.New("no fit")
	}
	c := Calibration{Model: model}
	if model == ModelShared {
		c.ComputeScale, c.CommScale, c.OverheadS = x[0], x[0], x[1]
	} else {
		c.ComputeScale, c.CommScale, c.OverheadS = x[0], x[1], x[2]
	}
	if c.ComputeScale <= 0 || c.CommScale <= 0 {
		return Calibration{}, errors.New("a zero scale")
	}
	return c, nil
}
