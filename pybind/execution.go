package pybind

import (
	"context"
	"fmt"

	"github.com/chainplan/chainplan/internal/service"
)

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
func RecordExecution(database string, planID int64, executionJSON string) (id int64, err error) {
	defer recoverError(&err)
	var e execution
	if err := strictUnmarshal(executionJSON, &e); err != nil {
		return 0, codedError(fmt.Errorf("%w: execution: %v", errBadRequest, err))
	}
	err = withDatabase(database, false, func(ctx context.Context, s *service.Service) error {
		id, err = s.RecordExecution(ctx, planID, service.Execution{StepTimeS: e.StepTimeS, PeakBytes: e.PeakBytes,
			Steps: e.Steps, Device: e.Device, TorchVersion: e.TorchVersion, Metadata: e.Metadata})
		return err
	})
	return id, err
}
