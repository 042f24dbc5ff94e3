package pybind

import (
	"context"
	"encoding/json"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/service"
)

// planned is Plan's answer: the whole planned document of one crossing.
type planned struct {
	Plan       *chainplan.Plan `json:"plan"`
	Algo       string          `json:"algo"`
	PlanID     int64           `json:"plan_id,omitempty"`
	RunID      int64           `json:"run_id,omitempty"`
	InputShape []int64         `json:"input_shape,omitempty"`
	// KeepLogits says whether the profile kept a language model's logits beside its loss
	// (service.Input.KeepsLogits), which the plan's executor captures the same way.
	KeepLogits bool `json:"keep_logits"`
	// ChainJSON is the chain of a file (Plan.chain_json in Python, for the user to read);
	// a stored run's is in the database, an inline chain's is the caller's.
	ChainJSON string `json:"chain_json,omitempty"`
}

// Plan is the checkpointing family's one crossing (chainplan.plan in Python): it reads
// callJSON ({"source": {"run_id": N, "db_env": "...", "home": "..."} or {"path": "..."},
// ..., "request": {...}}: the call envelope, see call), plans through internal/service as
// the CLI does (service.PlanInput: PlanRun, which records the plan; PlanProfile; PlanChain;
// PlanMultiChain) and returns {"plan": <chainplan.schedule/v1 document>, "algo": the
// algorithm planned with (the default when the request named none), "plan_id", "run_id",
// "keep_logits", "input_shape", "chain_json"}: what the executor needs, validated here (every plan is
// replayed by the simulator before it is returned), so that Python reads it once without
// checking it again. The request (service.Request's JSON form: {"algo", "budget",
// "slots", "segments", "bandwidth", "source"}; "algo" "" or left out means the input's
// default algorithm) has its budget and bandwidth read here with the CLI's rules
// ("2GiB", "min", "12GB/s").
func Plan(callJSON string) (result string, err error) {
	defer recoverError(&err)
	var c call
	if err := readCall(callJSON, "plan", &c); err != nil {
		return "", codedError(err)
	}
	req, err := parseRequest(c.request())
	if err != nil {
		return "", codedError(err)
	}
	err = withSource(c.Source, func(ctx context.Context, in *service.Input) error {
		got, err := service.PlanInput(ctx, in, req)
		if err != nil {
			return err
		}
		result, err = marshalPlanned(got, in)
		return err
	})
	return result, err
}

// marshalPlanned writes Plan's answer on in; a file's adds the chain's document (of a file,
// whose chain Python has no other way to know: Python keeps it for the user to read, and
// never sends it back).
func marshalPlanned(got *service.Planned, in *service.Input) (string, error) {
	out := planned{Plan: got.Plan, Algo: got.Algo, PlanID: got.PlanID, RunID: got.RunID, InputShape: got.InputShape,
		KeepLogits: in.KeepsLogits()}
	switch {
	case in.File != "" && in.Document != nil && got.Chain != nil: // a chain file: as it holds it
		out.ChainJSON = string(in.Document)
	case in.File != "" && got.Chain != nil:
		b, err := got.Chain.MarshalIndent()
		if err != nil {
			return "", err
		}
		out.ChainJSON = string(b)
	}
	b, err := json.Marshal(out)
	return string(b), err
}
