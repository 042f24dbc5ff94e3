package service

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/chainplan/chainplan/planner/calibration"
	"github.com/chainplan/chainplan/store"
)

// AdviceMeasurement is a measured run of an advised candidate, as both front ends record
// it (chainplan advice record, Advice.record).
type AdviceMeasurement struct {
	// Candidate is the candidate's position in the stored result (its list index from 0;
	// −1 for search3d's Megatron pick).
	Candidate int `json:"candidate"`
	// Iterations is how many iterations were timed (≥ 1); IterationTimeS their mean time,
	// the first (warm-up) iteration left out (spec §5.5).
	Iterations     int     `json:"iterations"`
	IterationTimeS float64 `json:"iteration_time_s"`
	// PeakBytes is the measured peak memory of a device, 0 when not measured.
	// PeakBytesPerRank are the peaks of every rank of a distributed run (issue 34's
	// launcher), kept in the measurement's metadata_json under the same key; PeakBytes is
	// then their largest (given too, it must equal it).
	PeakBytes        int64   `json:"peak_bytes"`
	PeakBytesPerRank []int64 `json:"peak_bytes_per_rank,omitempty"`
	// OutOfMemory marks a run that ran out of memory (its time is not an iteration's).
	OutOfMemory bool              `json:"out_of_memory"`
	Host        string            `json:"host"`
	Metadata    map[string]string `json:"metadata"`
}

// RecordAdviceMeasurement stores a measured run of candidate m.Candidate of advice
// adviceID and returns its id. Errors: ErrNotFound (wrapped) for an unknown advice or
// candidate; a value out of range (ErrBadInput).
func (s *Service) RecordAdviceMeasurement(ctx context.Context, adviceID int64, m AdviceMeasurement) (int64, error) {
	if m.Iterations < 1 {
		return 0, &inputError{"iterations must be ≥ 1"}
	}
	if math.IsNaN(m.IterationTimeS) || math.IsInf(m.IterationTimeS, 0) || m.IterationTimeS <= 0 {
		return 0, &inputError{"iteration_time_s must be a positive number of seconds"}
	}
	if m.PeakBytes < 0 {
		return 0, &inputError{"peak_bytes must be ≥ 0"}
	}
	meta, err := measurementMetadata(&m)
	if err != nil {
		return 0, err
	}
	sm := &store.AdviceMeasurement{AdviceID: adviceID, Candidate: m.Candidate, Iterations: m.Iterations,
		IterationTimeS: m.IterationTimeS, OutOfMemory: m.OutOfMemory, Host: m.Host, MetadataJSON: meta, CreatedAt: time.Now()}
	if m.PeakBytes > 0 {
		sm.PeakBytes.Int64, sm.PeakBytes.Valid = m.PeakBytes, true
	}
	return s.db.RecordAdviceMeasurement(ctx, sm)
}

// peakKey is the metadata key of a distributed run's per-rank peaks.
const peakKey = "peak_bytes_per_rank"

// measurementMetadata checks m's per-rank peaks, sets PeakBytes to their largest and
// returns the metadata_json to store: the caller's metadata and the per-rank peaks.
func measurementMetadata(m *AdviceMeasurement) ([]byte, error) {
	meta := map[string]any{}
	for k, v := range m.Metadata {
		meta[k] = v
	}
	if len(m.PeakBytesPerRank) > 0 {
		if _, ok := m.Metadata[peakKey]; ok {
			return nil, &inputError{"metadata: " + peakKey + " is reserved for the per-rank peaks"}
		}
		var largest int64
		for r, p := range m.PeakBytesPerRank {
			if p < 0 {
				return nil, &inputError{fmt.Sprintf("peak_bytes_per_rank[%d] must be ≥ 0 (got %d)", r, p)}
			}
			largest = max(largest, p)
		}
		if m.PeakBytes != 0 && m.PeakBytes != largest {
			return nil, &inputError{fmt.Sprintf("peak_bytes %d is not the largest of peak_bytes_per_rank (%d): give one or the other",
				m.PeakBytes, largest)}
		}
		m.PeakBytes = largest
		meta[peakKey] = m.PeakBytesPerRank
	}
	return json.Marshal(meta)
}

// AccuracyReport compares an advice's predictions with the runs recorded for it (spec
// §5.5): ParaDL's accuracy per candidate, AMP's ranking quality.
type AccuracyReport struct {
	AdviceID int64  `json:"advice_id"`
	Kind     string `json:"kind"`
	Model    string `json:"model"`
	Cluster  string `json:"cluster"`
	// Candidates are the measured candidates, in the result's order.
	Candidates []MeasuredCandidate `json:"candidates"`
	// MeanAccuracy is the mean of 1 − |pred − meas|/meas over the candidates measured
	// without running out of memory; 0 when there is none.
	MeanAccuracy float64 `json:"mean_accuracy"`
	// Spearman is Spearman's ρ between predicted and measured times over those candidates
	// (average ranks for ties); null with fewer than two.
	Spearman *float64 `json:"spearman"`
	// MeasuredBestRank is the predicted rank of the candidate measured fastest (AMP's "the
	// truly best strategy was ranked 3rd, 2nd and 1st"); 0 when none was measured.
	MeasuredBestRank int `json:"measured_best_rank"`
	// OutOfMemory counts the measured candidates that ran out of memory.
	OutOfMemory int `json:"out_of_memory"`
}

// MeasuredCandidate is one measured candidate of an AccuracyReport.
type MeasuredCandidate struct {
	Candidate  int      `json:"candidate"`
	Rank       int      `json:"rank"`
	Strategy   string   `json:"strategy"`
	Devices    int      `json:"devices"`
	PredictedS float64  `json:"predicted_iteration_time_s"`
	MeasuredS  float64  `json:"measured_iteration_time_s"` // 0: every run ran out of memory
	Runs       int      `json:"runs"`
	OOMRuns    int      `json:"out_of_memory_runs"`
	Accuracy   *float64 `json:"accuracy"`
	// PredictedMemoryBytes and MeasuredPeakBytes (0: not measured) are per device.
	PredictedMemoryBytes int64 `json:"predicted_memory_bytes"`
	MeasuredPeakBytes    int64 `json:"measured_peak_bytes"`
}

// Accuracy returns the report of advice adviceID, or an error wrapping ErrNotFound.
func (s *Service) Accuracy(ctx context.Context, adviceID int64) (*AccuracyReport, error) {
	a, err := s.db.AdviceByID(ctx, adviceID)
	if err != nil {
		return nil, err
	}
	rows, err := s.db.AdviceAccuracy(ctx, adviceID)
	if err != nil {
		return nil, err
	}
	rep := &AccuracyReport{AdviceID: a.ID, Kind: a.Kind, Model: a.ModelName, Cluster: a.ClusterName,
		Candidates: []MeasuredCandidate{}}
	var pred, meas []float64
	best, bestRank := math.Inf(1), 0
	for _, r := range rows {
		mc := MeasuredCandidate{Candidate: r.Candidate, Rank: r.Rank, Strategy: r.Strategy, Devices: r.Devices,
			PredictedS: r.PredictedS, MeasuredS: r.MeasuredS, Runs: r.Runs, OOMRuns: r.OutOfMemory,
			PredictedMemoryBytes: r.PredictedMemory, MeasuredPeakBytes: r.MeasuredPeakBytes.Int64}
		if r.OutOfMemory > 0 {
			rep.OutOfMemory++
		}
		if r.Accuracy.Valid {
			acc := r.Accuracy.Float64
			mc.Accuracy = &acc
			pred, meas = append(pred, r.PredictedS), append(meas, r.MeasuredS)
			rep.MeanAccuracy += acc
			if r.MeasuredS < best {
				best, bestRank = r.MeasuredS, r.Rank
			}
		}
		rep.Candidates = append(rep.Candidates, mc)
	}
	if n := len(pred); n > 0 {
		rep.MeanAccuracy /= float64(n)
		rep.MeasuredBestRank = bestRank
	}
	if len(pred) >= 2 {
		rho := calibration.Spearman(pred, meas)
		rep.Spearman = &rho
	}
	return rep, nil
}
