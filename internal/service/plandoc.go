package service

import (
	"context"
	"encoding/json"
)

// PlanDocument returns stored plan planID's whole document, whatever its family, and the
// run it was computed from. Errors: chainplan.ErrNotFound for a missing plan.
func (s *Service) PlanDocument(ctx context.Context, planID int64) (runID int64, doc json.RawMessage, err error) {
	sp, err := s.db.Plan(ctx, planID)
	if err != nil {
		return 0, nil, err
	}
	if doc, err = s.db.PlanDocument(ctx, planID); err != nil {
		return 0, nil, err
	}
	return sp.RunID, doc, nil
}
