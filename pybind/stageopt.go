package pybind

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/chainplan/chainplan/planner/stageopt"
)

// StageOptions computes the operation-level options of one stage (package stageopt) from
// graphJSON, a stageopt.Graph ({"nodes": [{"time", "bytes", "internal", "inputs",
// "source", "output", "saved"}, ...]}), at points budgets between keeping nothing and
// keeping everything (0: the default). It returns {"options": [stageopt.Option...],
// "notes": [...]}: keeping nothing first, then the best kept sets in increasing bytes.
func StageOptions(graphJSON string, points int) (result string, err error) {
	defer recoverError(&err)
	var g stageopt.Graph
	dec := json.NewDecoder(strings.NewReader(graphJSON))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&g); err != nil {
		return "", codedError(fmt.Errorf("%w: stage graph: %v", errBadRequest, err))
	}
	opts, notes, err := stageopt.Options(context.Background(), &g, stageopt.Settings{Points: points})
	if err != nil {
		return "", codedError(fmt.Errorf("%w: %v", errBadRequest, err))
	}
	b, err := json.Marshal(struct {
		Options []stageopt.Option `json:"options"`
		Notes   []string          `json:"notes"`
	}{opts, notes})
	return string(b), codedError(err)
}
