package pybind

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/chainplan/chainplan/internal/service"
	"github.com/chainplan/chainplan/planner"
	"github.com/chainplan/chainplan/planner/amp"
	"github.com/chainplan/chainplan/planner/cluster"
	"github.com/chainplan/chainplan/planner/paradl"
)

// parallelCall is the argument of Advise and Search3D: the call envelope, the cluster's
// text (YAML or JSON), and for a chain (which does not record them) the batch it was
// measured at and its element size in bytes (δ, 0: 4); nominal_links plans on the
// cluster's bandwidths even where the store holds measured ones for the run.
type parallelCall struct {
	call
	Cluster      string `json:"cluster"`
	Batch        int64  `json:"batch"`
	DTypeBytes   int64  `json:"dtype_bytes"`
	NominalLinks bool   `json:"nominal_links"`
}

// Advise ranks parallel strategies (chainplan.advise) for the source of callJSON
// ({"source": {...}, "request": paradl.Options' JSON ({"dataset_size": D, "global_batch":
// B, ...}), "cluster": text, "batch": N, "dtype_bytes": δ, "nominal_links": false}), recording the advice of a
// stored run. It returns {"advice_id": N (0: not stored), "advice": {...}}
// (chainplan.advice/v1). When no candidate is feasible the error is
// chainplan[infeasible;min_budget_bytes=N] with the least memory per device any candidate
// needs.
func Advise(callJSON string) (result string, err error) {
	defer recoverError(&err)
	return parallel(callJSON, planner.AlgoAdvise, "advice",
		func(ctx context.Context, s *service.Service, in service.ParallelInput, o paradl.Options) (*service.Advised, any, error) {
			got, err := s.Advise(ctx, in, o)
			if err != nil {
				return nil, nil, err
			}
			return got, got.Advice, service.CheckFeasible(got.Advice)
		})
}

// Search3D runs the 3-D search (chainplan.search3d) on the same call as Advise, the
// request amp.Options' JSON ({"global_batch": gbs, ...}); it returns {"advice_id": N,
// "result": {...}} (chainplan.search3d/v1).
func Search3D(callJSON string) (result string, err error) {
	defer recoverError(&err)
	return parallel(callJSON, planner.AlgoSearch3D, "result",
		func(ctx context.Context, s *service.Service, in service.ParallelInput, o amp.Options) (*service.Advised, any, error) {
			got, err := s.Search3D(ctx, in, o)
			if err != nil {
				return nil, nil, err
			}
			return got, got.Search, nil
		})
}

// parallel decodes the call and the options O of a parallel planner (strictly), resolves
// the source into its workload (service.WorkloadOf), runs the planner and writes
// {"advice_id": N, key: document}.
func parallel[O any](callJSON, what, key string,
	run func(ctx context.Context, s *service.Service, in service.ParallelInput, o O) (*service.Advised, any, error)) (string, error) {
	var c parallelCall
	if err := readCall(callJSON, what, &c); err != nil {
		return "", codedError(err)
	}
	var o O
	if err := strictUnmarshal(c.request(), &o); err != nil {
		return "", codedError(fmt.Errorf("%w: request: %v", errBadRequest, err))
	}
	cl, err := cluster.Parse([]byte(c.Cluster))
	if err != nil {
		return "", codedError(err)
	}
	var result string
	err = withSource(c.Source, func(ctx context.Context, src *service.Input) error {
		in := service.ParallelInput{Source: service.SourcePython, Cluster: cl, RunID: src.RunID, NominalLinks: c.NominalLinks}
		var err error
		if in.Model, err = service.WorkloadOf(ctx, src, c.Batch, c.DTypeBytes, "batch"); err != nil {
			return err
		}
		got, doc, err := run(ctx, src.Service(), in, o)
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
func RecordAdviceMeasurement(database string, adviceID int64, measurementJSON string) (id int64, err error) {
	defer recoverError(&err)
	var m service.AdviceMeasurement
	if err := strictUnmarshal(measurementJSON, &m); err != nil {
		return 0, codedError(fmt.Errorf("%w: measurement: %v", errBadRequest, err))
	}
	err = withDatabase(database, false, func(ctx context.Context, s *service.Service) error {
		var err error
		id, err = s.RecordAdviceMeasurement(ctx, adviceID, m)
		return err
	})
	return id, err
}

// AdviceAccuracy returns the accuracy report of stored advice adviceID
// (service.AccuracyReport's JSON).
func AdviceAccuracy(database string, adviceID int64) (result string, err error) {
	defer recoverError(&err)
	err = withDatabase(database, false, func(ctx context.Context, s *service.Service) error {
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
