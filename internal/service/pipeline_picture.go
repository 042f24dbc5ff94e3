package service

import (
	"context"
	"fmt"
	"strconv"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/plot"
)

// PipelinePicture returns the Gantt chart of stored pipeline plan planID
// (plot.PipelineOf, periods periods; 0: the default): its lanes named after the device
// its run was profiled on ("CPU 0", "GPU 0"), its title naming the plan, and beside each
// device's predicted memory the largest peak its rank measured in the plan's executions.
// Errors: chainplan.ErrNotFound for a missing plan or run; a plan of another family wraps
// chainplan.ErrUnsupported and names the picture to draw instead.
func (s *Service) PipelinePicture(ctx context.Context, planID int64, periods int) (*plot.PipelineData, error) {
	p, _, ok, err := s.StoredPipelinePlan(ctx, planID)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: plan %d is not a pipeline plan: draw it with chainplan plot timeline --plan-id %d",
			chainplan.ErrUnsupported, planID, planID)
	}
	sp, err := s.db.Plan(ctx, planID)
	if err != nil {
		return nil, err
	}
	run, err := s.db.Run(ctx, sp.RunID)
	if err != nil {
		return nil, err
	}
	d, err := plot.PipelineOf(p, periods)
	if err != nil {
		return nil, fmt.Errorf("plan %d: %w", planID, err)
	}
	d.SetDeviceKind(plot.DeviceKindOf(run.Device))
	d.Title = fmt.Sprintf("Plan %d (run %d): %s on %d devices, period %s, %.2fx one device", planID, sp.RunID, p.Algo,
		p.GPUs, plot.FormatTime(p.Period), p.Speedup())
	if d.MeasuredBytes, err = s.rankPeaks(ctx, planID, p.GPUs); err != nil {
		return nil, err
	}
	return d, nil
}

// rankPeaks returns the largest peak each rank of a pipeline plan measured (0 for a rank
// that never reported), nil when the plan never ran.
func (s *Service) rankPeaks(ctx context.Context, planID int64, gpus int) ([]int64, error) {
	execs, err := s.db.Executions(ctx, planID)
	if err != nil || len(execs) == 0 {
		return nil, err
	}
	peaks := make([]int64, gpus)
	for _, e := range execs {
		r, err := strconv.Atoi(e.Metadata["rank"])
		if err != nil || r < 0 || r >= gpus {
			continue // an execution recorded without its rank
		}
		peaks[r] = max(peaks[r], e.PeakBytes)
	}
	return peaks, nil
}
