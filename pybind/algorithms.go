package pybind

import (
	"encoding/json"

	"github.com/chainplan/chainplan/planner"
)

// Algorithms returns the planner registry as JSON (planner.Entries): a list of objects
// {"name", "family", "format", "summary", "needs", "takes", "frontier"}, where needs and
// takes list the request fields ("slots", "segments", "bandwidth") the algorithm
// requires or reads. Python reads it once to check requests before any work.
func Algorithms() (table string, err error) {
	defer recoverError(&err)
	b, err := json.Marshal(planner.Entries())
	if err != nil {
		return "", codedError(err)
	}
	return string(b), nil
}
