package pybind

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/chainplan/chainplan/internal/service"
	"github.com/chainplan/chainplan/profile"
	"github.com/chainplan/chainplan/store"
)

// runJSON is one stored run as Runs and Run return it.
type runJSON struct {
	RunID          int64   `json:"run_id"`
	ModelName      string  `json:"model_name"`
	ModelSignature string  `json:"model_signature"`
	CreatedAt      string  `json:"created_at"`
	Device         string  `json:"device"`
	DType          string  `json:"dtype"`
	TorchVersion   string  `json:"torch_version"`
	NumStages      int     `json:"num_stages"`
	BatchSize      int64   `json:"batch_size"`
	InputShape     []int64 `json:"input_shape"` // [] when the profile did not record it
	FwdTimeS       float64 `json:"fwd_time_s"`
	BwdTimeS       float64 `json:"bwd_time_s"`
	SourcePath     string  `json:"source_path"`
	// Towers is true for a profile of towers joined at the loss (profile.Towers), which the
	// multichain algorithms plan.
	Towers bool `json:"towers"`
}

func runOf(r *store.Run) runJSON {
	shape := r.InputShape
	if shape == nil {
		shape = []int64{}
	}
	_, towers := r.Extra[profile.KeyTowers]
	return runJSON{RunID: r.ID, ModelName: r.ModelName, ModelSignature: r.ModelSignature,
		CreatedAt: r.CreatedAt.UTC().Format(time.RFC3339), Device: r.Device, DType: r.DType,
		TorchVersion: r.TorchVersion, NumStages: r.NumStages, BatchSize: r.BatchSize, InputShape: shape,
		FwdTimeS: r.TotalFwdTimeS, BwdTimeS: r.TotalBwdTimeS, SourcePath: r.SourcePath, Towers: towers}
}

// runFilter is the JSON form of store.RunFilter.
type runFilter struct {
	ModelName      string `json:"model_name"`
	ModelSignature string `json:"model_signature"`
	DType          string `json:"dtype"`
	Device         string `json:"device"`
	TorchVersion   string `json:"torch_version"`
	LossName       string `json:"loss_name"`
	CallSignature  string `json:"call_signature"`
	SavedMeasured  bool   `json:"saved_measured"`
	Limit          int    `json:"limit"`
}

// Runs lists the stored runs that filterJSON selects ({"model_name", "model_signature",
// "dtype", "device", "torch_version", "loss_name", "call_signature": strings, empty for any;
// "saved_measured": only runs whose saved sizes were measured; "limit": at most this
// many, 0 for all}), newest first, as a JSON array of runs (see Run).
func Runs(database, filterJSON string) (list string, err error) {
	defer recoverError(&err)
	var f runFilter
	if err := strictUnmarshal(filterJSON, &f); err != nil {
		return "", codedError(fmt.Errorf("%w: run filter: %v", errBadRequest, err))
	}
	err = withDatabase(database, false, func(ctx context.Context, s *service.Service) error {
		runs, err := s.Runs(ctx, store.RunFilter{ModelName: f.ModelName, ModelSignature: f.ModelSignature,
			DType: f.DType, Device: f.Device, TorchVersion: f.TorchVersion, LossName: f.LossName,
			CallSignature: f.CallSignature, SavedMeasured: f.SavedMeasured, Limit: f.Limit})
		if err != nil {
			return err
		}
		out := make([]runJSON, len(runs))
		for i, r := range runs {
			out[i] = runOf(r)
		}
		b, err := json.Marshal(out)
		list = string(b)
		return err
	})
	return list, err
}

// Run returns stored run runID as JSON: {"run_id", "model_name", "model_signature",
// "created_at", "device", "dtype", "torch_version", "num_stages", "batch_size",
// "input_shape", "fwd_time_s", "bwd_time_s", "source_path"} (times: totals in seconds).
func Run(database string, runID int64) (run string, err error) {
	defer recoverError(&err)
	err = withDatabase(database, false, func(ctx context.Context, s *service.Service) error {
		r, err := s.Run(ctx, service.RunID(runID))
		if err != nil {
			return err
		}
		b, err := json.Marshal(runOf(r))
		run = string(b)
		return err
	})
	return run, err
}

// strictUnmarshal reads the JSON object s into v, refusing keys v does not have: a
// misspelt option is an error, not a silent default.
func strictUnmarshal(s string, v any) error {
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
