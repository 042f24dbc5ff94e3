package pybind

import (
	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/service"
)

// SolveMultichain plans the towers of bundleJSON (a chainplan.multichain/v1 document) as
// requestJSON asks ({"algo": "multichain", "budget_bytes": N, "slots": 0, "min_budget":
// false}; algo a multichain algorithm) and returns the plan as JSON: its operations name
// their branch, and its multichain section says how it was made (docs/multichain.md).
func SolveMultichain(bundleJSON, requestJSON string) (plan string, err error) {
	defer recoverError(&err)
	mc, err := chainplan.ParseMultiChain([]byte(bundleJSON))
	if err != nil {
		return "", codedError(err)
	}
	req, err := parseRequest(requestJSON)
	if err != nil {
		return "", codedError(err)
	}
	p, err := service.SolveMultichain(mc, req)
	if err != nil {
		return "", codedError(err)
	}
	return marshalPlan(p)
}
