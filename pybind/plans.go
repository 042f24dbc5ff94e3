package pybind

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/chainplan/chainplan/internal/service"
)

// SolveRun plans the chain of stored run runID as requestJSON asks (see Solve; its
// "source" says who asks: "python", the default, or "checkpointed"), records the plan
// with the service's parameters (docs/sql.md) and returns {"plan_id": N, "plan": {...}}
// as JSON.
func SolveRun(dbPath string, runID int64, requestJSON string) (result string, err error) {
	defer recoverError(&err)
	req, err := parseRequest(requestJSON)
	if err != nil {
		return "", codedError(err)
	}
	err = withService(dbPath, false, func(ctx context.Context, s *service.Service) error {
		got, err := s.PlanRun(ctx, service.RunID(runID), req)
		if err != nil {
			return err
		}
		b, err := json.Marshal(map[string]any{"plan_id": got.PlanID, "plan": got.Plan})
		result = string(b)
		return err
	})
	return result, err
}

// SolveFile plans the chain aggregated from a profile file (not stored), or the bundle of
// a profile of towers joined at the loss, and returns the plan as JSON.
func SolveFile(filePath, requestJSON string) (plan string, err error) {
	defer recoverError(&err)
	req, err := parseRequest(requestJSON)
	if err != nil {
		return "", codedError(err)
	}
	prof, err := readProfile(filePath)
	if err != nil {
		return "", codedError(err)
	}
	got, err := service.PlanProfile(prof, req)
	if err != nil {
		return "", codedError(err)
	}
	return marshalPlan(got.Plan)
}

// execution is the JSON form of a measured execution from Python.
type execution struct {
	StepTimeS    float64           `json:"step_time_s"`
	PeakBytes    int64             `json:"peak_bytes"`
	Steps        int64             `json:"steps"`
	Device       string            `json:"device"`
	TorchVersion string            `json:"torch_version"`
	Metadata     map[string]string `json:"metadata"`
}

// RecordExecution stores a measured execution of plan planID ({"step_time_s": s,
// "peak_bytes": N, "steps": N, "device": "...", "torch_version": "...", "metadata":
// {...}}) and returns its id.
func RecordExecution(dbPath string, planID int64, executionJSON string) (id int64, err error) {
	defer recoverError(&err)
	var e execution
	if err := strictUnmarshal(executionJSON, &e); err != nil {
		return 0, codedError(fmt.Errorf("%w: execution: %v", errBadRequest, err))
	}
	err = withService(dbPath, false, func(ctx context.Context, s *service.Service) error {
		id, err = s.RecordExecution(ctx, planID, service.Execution{StepTimeS: e.StepTimeS, PeakBytes: e.PeakBytes,
			Steps: e.Steps, Device: e.Device, TorchVersion: e.TorchVersion, Metadata: e.Metadata})
		return err
	})
	return id, err
}
