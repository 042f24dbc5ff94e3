package pybind

import (
	"context"
	"encoding/json"

	"github.com/chainplan/chainplan/internal/service"
)

// PlanDocument returns stored plan planID as {"run_id": N, "plan": <its document>}, so
// that Python reads stored plans of any family without SQL against the store's tables.
func PlanDocument(dbPath string, planID int64) (result string, err error) {
	defer recoverError(&err)
	err = withService(dbPath, false, func(ctx context.Context, s *service.Service) error {
		runID, doc, err := s.PlanDocument(ctx, planID)
		if err != nil {
			return err
		}
		b, err := json.Marshal(struct {
			RunID int64           `json:"run_id"`
			Plan  json.RawMessage `json:"plan"`
		}{runID, doc})
		result = string(b)
		return err
	})
	return result, err
}
