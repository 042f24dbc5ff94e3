package service

import (
	"context"
	"fmt"
	"math"
	"os"

	"github.com/chainplan/chainplan/store"
)

// Execution is what a front end measured while running a plan: the executions table's
// row without the ids, the time and the host, which RecordExecution fills in.
type Execution struct {
	StepTimeS    float64           // median step time, seconds
	PeakBytes    int64             // measured activation peak, comparable with the plan's
	Steps        int64             // training steps measured (0: one)
	Device       string            // "cpu", "cuda:0", ...
	TorchVersion string            // torch.__version__
	Metadata     map[string]string // anything else the recorder knows
}

// RecordExecution stores a measured execution of plan planID and returns its id. A
// measurement out of range fails with an error wrapping ErrBadInput that names the field;
// a plan that does not exist with one wrapping chainplan.ErrNotFound. The plan_outcomes
// view sets each plan's prediction beside what its executions measured.
func (s *Service) RecordExecution(ctx context.Context, planID int64, e Execution) (int64, error) {
	switch {
	case math.IsNaN(e.StepTimeS) || math.IsInf(e.StepTimeS, 0) || e.StepTimeS < 0:
		return 0, &inputError{fmt.Sprintf("execution: step_time_s must be a finite number of seconds ≥ 0 (got %v)", e.StepTimeS)}
	case e.PeakBytes < 0:
		return 0, &inputError{fmt.Sprintf("execution: peak_bytes must be ≥ 0 (got %d)", e.PeakBytes)}
	case e.Steps < 0:
		return 0, &inputError{fmt.Sprintf("execution: steps must be ≥ 1 (got %d)", e.Steps)}
	}
	host, err := os.Hostname()
	if err != nil {
		host = ""
	}
	return s.db.RecordExecution(ctx, &store.Execution{PlanID: planID, Steps: max(e.Steps, 1), StepTimeS: e.StepTimeS,
		PeakBytes: e.PeakBytes, TorchVersion: e.TorchVersion, Device: e.Device, Host: host, Metadata: e.Metadata})
}
