package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/chainplan/chainplan/planner/amp"
	"github.com/chainplan/chainplan/planner/calibration"
)

// Calibrate fits search3d's calibration (planner/calibration) to the measured candidates
// of stored search3d advice ids, all on one cluster: each candidate measured without
// running out of memory gives a pair of its predicted computation and communication (the
// calibration the advice was made under taken out) and its mean measured iteration time.
// Errors (ErrBadInput): no id, an advice of advise (its predictions are per epoch and not
// calibrated), advice on different clusters, advice stored before predictions were split
// (no compute_s), fewer than 2 measured candidates; ErrNotFound for an unknown id.
func (s *Service) Calibrate(ctx context.Context, adviceIDs []int64) (*calibration.Calibration, error) {
	if len(adviceIDs) == 0 {
		return nil, &inputError{"calibrate: name at least one stored search3d advice"}
	}
	var pairs []calibration.Pair
	cluster := ""
	for _, id := range adviceIDs {
		a, err := s.db.AdviceByID(ctx, id)
		if err != nil {
			return nil, err
		}
		if a.Kind != "search3d" {
			return nil, &inputError{fmt.Sprintf("calibrate: advice %d is %s's; only search3d's predictions are calibrated", id, a.Kind)}
		}
		if cluster != "" && a.ClusterName != cluster {
			return nil, &inputError{fmt.Sprintf("calibrate: advice %d is for cluster %q, the others for %q: a calibration is per cluster",
				id, a.ClusterName, cluster)}
		}
		cluster = a.ClusterName
		got, err := s.calibrationPairs(ctx, id, a.RequestJSON, a.ResultJSON)
		if err != nil {
			return nil, err
		}
		pairs = append(pairs, got...)
	}
	c, err := calibration.Fit(pairs)
	if errors.Is(err, calibration.ErrTooFew) {
		return nil, &inputError{fmt.Sprintf("calibrate: %d measured candidate(s) in advice %v; record at least 2 (chainplan advice record)",
			len(pairs), adviceIDs)}
	}
	if err != nil {
		return nil, &inputError{err.Error()}
	}
	c.Cluster = cluster
	return &c, nil
}

// calibrationPairs returns the pairs of one stored search3d advice: its measured
// candidates' predictions, uncalibrated, beside their mean measured times.
func (s *Service) calibrationPairs(ctx context.Context, id int64, request, result string) ([]calibration.Pair, error) {
	var o amp.Options
	var r amp.Result
	if err := json.Unmarshal([]byte(request), &o); err != nil {
		return nil, fmt.Errorf("advice %d: stored request: %w", id, err)
	}
	if err := json.Unmarshal([]byte(result), &r); err != nil {
		return nil, fmt.Errorf("advice %d: stored result: %w", id, err)
	}
	prev := calibration.Identity
	if o.Calibration != nil {
		prev = *o.Calibration
	}
	rows, err := s.db.AdviceAccuracy(ctx, id)
	if err != nil {
		return nil, err
	}
	var pairs []calibration.Pair
	for _, row := range rows {
		if !row.Accuracy.Valid {
			continue // every run ran out of memory
		}
		c := r.Megatron
		if row.Candidate >= 0 && row.Candidate < len(r.Candidates) {
			c = &r.Candidates[row.Candidate]
		}
		if c == nil {
			return nil, fmt.Errorf("advice %d: measured candidate %d is not in the stored result", id, row.Candidate)
		}
		if c.ComputeS+c.CommS <= 0 {
			return nil, &inputError{fmt.Sprintf("calibrate: advice %d was stored without compute_s and comm_s (before chainplan "+
				"split its predictions): run search3d again and record the runs against the new advice", id)}
		}
		pairs = append(pairs, calibration.Pair{ComputeS: c.ComputeS / prev.ComputeScale, CommS: c.CommS / prev.CommScale,
			MeasuredS: row.MeasuredS})
	}
	return pairs, nil
}
