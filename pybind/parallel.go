package pybind

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/service"
	"github.com/chainplan/chainplan/planner/amp"
	"github.com/chainplan/chainplan/planner/cluster"
	"github.com/chainplan/chainplan/planner/paradl"
)

// parallelInput reads what the parallel planners take from Python: the cluster text, and
// when runID ≤ 0 the profile file profilePath, or else the chain chainJSON measured at
// batch samples (δ = dtypeBytes), named name.
func parallelInput(runID int64, profilePath, chainJSON, name string, batch, dtypeBytes int64, clusterText string) (service.ParallelInput, error) {
	in := service.ParallelInput{Source: service.SourcePython, RunID: max(runID, 0)}
	c, err := cluster.Parse([]byte(clusterText))
	if err != nil {
		return in, err
	}
	in.Cluster = c
	if runID > 0 {
		return in, nil
	}
	if profilePath != "" {
		in.Model, err = service.FileWorkload(profilePath)
		return in, err
	}
	ch, err := chainplan.ParseChain([]byte(chainJSON))
	if err != nil {
		return in, err
	}
	in.Model, err = service.ChainWorkload(ch, name, batch, dtypeBytes)
	return in, err
}

// runParallel runs fn on the workload of a stored run (its database opened at dbPath) or
// of a chain, and returns the coded error.
func runParallel(dbPath string, in service.ParallelInput, fn func(ctx context.Context, s *service.Service, in service.ParallelInput) error) error {
	if in.RunID == 0 {
		return codedError(fn(context.Background(), nil, in))
	}
	var runErr error
	err := withService(dbPath, false, func(ctx context.Context, s *service.Service) error {
		var err error
		if in.Model, _, err = s.RunWorkload(ctx, service.RunID(in.RunID)); err != nil {
			runErr = err
			return err
		}
		runErr = fn(ctx, s, in)
		return runErr
	})
	if runErr != nil {
		return codedError(runErr)
	}
	return err
}

// Advise ranks parallel strategies (chainplan.advise): for stored run runID (> 0) of the
// database at dbPath, recording the advice, or when runID ≤ 0 for the profile file
// profilePath, or the chain chainJSON (named name) measured at batch samples (δ =
// dtypeBytes); on the cluster clusterText (YAML or JSON); with the options requestJSON
// (paradl.Options' JSON: {"dataset_size": D, "global_batch": B, ...}). It returns
// {"advice_id": N (0: not stored), "advice": {...}} (chainplan.advice/v1). When no
// candidate is feasible the error is chainplan[infeasible;min_budget_bytes=N] with the
// least memory per device any candidate needs.
func Advise(dbPath string, runID int64, profilePath, chainJSON, name string, batch, dtypeBytes int64, clusterText, requestJSON string) (result string, err error) {
	defer recoverError(&err)
	return parallel(dbPath, runID, profilePath, chainJSON, name, batch, dtypeBytes, clusterText, requestJSON, "advice",
		func(ctx context.Context, s *service.Service, in service.ParallelInput, o paradl.Options) (*service.Advised, any, error) {
			got, err := s.Advise(ctx, in, o)
			if err != nil {
				return nil, nil, err
			}
			return got, got.Advice, service.CheckFeasible(got.Advice)
		})
}

// Search3D runs the 3-D search (chainplan.search3d) on the same inputs as Advise, with
// the options requestJSON (amp.Options' JSON: {"global_batch": gbs, ...}); it returns
// {"advice_id": N, "result": {...}} (chainplan.search3d/v1).
func Search3D(dbPath string, runID int64, profilePath, chainJSON, name string, batch, dtypeBytes int64, clusterText, requestJSON string) (result string, err error) {
	defer recoverError(&err)
	return parallel(dbPath, runID, profilePath, chainJSON, name, batch, dtypeBytes, clusterText, requestJSON, "result",
		func(ctx context.Context, s *service.Service, in service.ParallelInput, o amp.Options) (*service.Advised, any, error) {
			got, err := s.Search3D(ctx, in, o)
			if err != nil {
				return nil, nil, err
			}
			return got, got.Search, nil
		})
}

// parallel decodes the options O of a parallel planner (strictly), reads its inputs, runs
// it and writes {"advice_id": N, key: document}.
func parallel[O any](dbPath string, runID int64, profilePath, chainJSON, name string, batch, dtypeBytes int64,
	clusterText, requestJSON, key string,
	run func(ctx context.Context, s *service.Service, in service.ParallelInput, o O) (*service.Advised, any, error)) (string, error) {
	var o O
	if err := strictUnmarshal(requestJSON, &o); err != nil {
		return "", codedError(fmt.Errorf("%w: request: %v", errBadRequest, err))
	}
	in, err := parallelInput(runID, profilePath, chainJSON, name, batch, dtypeBytes, clusterText)
	if err != nil {
		return "", codedError(err)
	}
	var result string
	err = runParallel(dbPath, in, func(ctx context.Context, s *service.Service, in service.ParallelInput) error {
		got, doc, err := run(ctx, s, in, o)
		if err != nil {
			return err
		}
		b, err := json.Marshal(map[string]any{"advice_id": got.AdviceID, key: doc})
		result = string(b)
		return err
	})
	return result, err
}

// RecordAdviceMeasurement stores a measured run of a candidate of stored advice adviceID
// (measurementJSON: service.AdviceMeasurement's JSON) and returns its id.
func RecordAdviceMeasurement(dbPath string, adviceID int64, measurementJSON string) (id int64, err error) {
	defer recoverError(&err)
	var m service.AdviceMeasurement
	if err := strictUnmarshal(measurementJSON, &m); err != nil {
		return 0, codedError(fmt.Errorf("%w: measurement: %v", errBadRequest, err))
	}
	err = withService(dbPath, false, func(ctx context.Context, s *service.Service) error {
		var err error
		id, err = s.RecordAdviceMeasurement(ctx, adviceID, m)
		return err
	})
	return id, err
}

// AdviceAccuracy returns the accuracy report of stored advice adviceID
// (service.AccuracyReport's JSON).
func AdviceAccuracy(dbPath string, adviceID int64) (result string, err error) {
	defer recoverError(&err)
	err = withService(dbPath, false, func(ctx context.Context, s *service.Service) error {
		rep, err := s.Accuracy(ctx, adviceID)
		if err != nil {
			return err
		}
		b, err := json.Marshal(rep)
		result = string(b)
		return err
	})
	return result, err
}
