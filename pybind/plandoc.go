package pybind

import (
	"context"
	"encoding/json"

	"github.com/chainplan/chainplan/internal/service"
	"github.com/chainplan/chainplan/pipeplan"
)

// PlanDocument returns stored plan planID as {"run_id": N, "plan": <its document>}, so
// that Python reads stored plans of any family without SQL against the store's tables; a
// pipeline plan adds "layer_param_bytes", each layer's weights of its run's chain.
func PlanDocument(database string, planID int64) (result string, err error) {
	defer recoverError(&err)
	err = withDatabase(database, false, func(ctx context.Context, s *service.Service) error {
		runID, doc, err := s.PlanDocument(ctx, planID)
		if err != nil {
			return err
		}
		// A pipeline plan comes with each layer's weights, which its runner checks the model
		// against: the whole planned document in one crossing.
		var params []int64
		if pipeplan.IsPipelinePlan(doc) {
			c, err := s.RunChain(ctx, runID)
			if err != nil {
				return err
			}
			params = layerParamBytes(c)
		}
		b, err := json.Marshal(struct {
			RunID           int64           `json:"run_id"`
			Plan            json.RawMessage `json:"plan"`
			LayerParamBytes []int64         `json:"layer_param_bytes,omitempty"`
		}{runID, doc, params})
		result = string(b)
		return err
	})
	return result, err
}
