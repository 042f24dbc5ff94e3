package pybind

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/service"
)

// planCall is Plan's argument: the request and what it plans, exactly one of a stored
// run, a profile file and a chain document, with the environment the database path is
// read from.
type planCall struct {
	// Request is service.Request's JSON form: {"algo", "budget", "slots", "segments",
	// "bandwidth", "source"}; "algo" "" or left out means the input's default algorithm.
	Request json.RawMessage `json:"request"`
	// RunID plans stored run RunID and records the plan (in the database that DBEnv and
	// Home name, service.DBPath: Python passes the environment of the moment, which the
	// Go runtime loaded into it would not see).
	RunID int64  `json:"run_id"`
	DBEnv string `json:"db_env"`
	Home  string `json:"home"`
	// ProfilePath plans the profile file at that path, without storing anything.
	ProfilePath string `json:"profile_path"`
	// Chain plans a chainplan.chain/v1 (or v2) document, given as its text.
	Chain string `json:"chain"`
}

// planned is Plan's answer: the whole planned document of one crossing.
type planned struct {
	Plan       *chainplan.Plan `json:"plan"`
	Algo       string          `json:"algo"`
	PlanID     int64           `json:"plan_id,omitempty"`
	RunID      int64           `json:"run_id,omitempty"`
	InputShape []int64         `json:"input_shape,omitempty"`
	// ChainJSON is the chain of a profile file, which Python keeps for the plan's
	// pictures; a stored run's is in the database, a chain's is the caller's.
	ChainJSON string `json:"chain_json,omitempty"`
}

// Plan is the checkpointing family's one crossing (chainplan.plan in Python): it reads
// callJSON ({"request": {...}, "run_id": N, "db_env": "...", "home": "..."}, or
// {"request": {...}, "profile_path": "..."}, or {"request": {...}, "chain": "<chain
// document>"}), plans through internal/service as the CLI does (PlanRun, which records the
// plan; PlanProfile; PlanChain) and returns {"plan": <chainplan.schedule/v1 document>,
// "algo": the algorithm planned with (the default when the request named none),
// "plan_id", "run_id", "input_shape", "chain_json"}: what the executor needs, validated
// here (every plan is replayed by the simulator before it is returned), so that Python
// reads it once without checking it again. The request's budget and bandwidth are read
// here with the CLI's rules ("2GiB", "min", "12GB/s").
func Plan(callJSON string) (result string, err error) {
	defer recoverError(&err)
	var call planCall
	if err := strictUnmarshal(callJSON, &call); err != nil {
		return "", codedError(badRequest(fmt.Errorf("plan call: %v", err)))
	}
	req, err := parseRequest(string(call.Request))
	if err != nil {
		return "", codedError(err)
	}
	inputs := 0
	for _, given := range []bool{call.RunID != 0, call.ProfilePath != "", call.Chain != ""} {
		if given {
			inputs++
		}
	}
	if inputs != 1 {
		return "", codedError(badRequest(fmt.Errorf("plan call: give exactly one of run_id, profile_path and chain (got %d)",
			inputs)))
	}
	var got *service.Planned
	switch {
	case call.RunID != 0:
		db, err := service.DBPath("", call.DBEnv, call.Home)
		if err != nil {
			return "", codedError(err)
		}
		err = withService(db, false, func(ctx context.Context, s *service.Service) error {
			got, err = s.PlanRun(ctx, service.RunID(call.RunID), req)
			return err
		})
		if err != nil {
			return "", err
		}
	case call.ProfilePath != "":
		prof, err := readProfile(call.ProfilePath)
		if err != nil {
			return "", codedError(err)
		}
		if got, err = service.PlanProfile(prof, req); err != nil {
			return "", codedError(err)
		}
	default:
		c, err := chainplan.ParseChain([]byte(call.Chain))
		if err != nil {
			return "", codedError(err)
		}
		if got, err = service.PlanChain(c, req); err != nil {
			return "", codedError(err)
		}
	}
	return marshalPlanned(got, call.ProfilePath != "")
}

// marshalPlanned writes Plan's answer; withChain adds the chain's document (a profile
// file's, whose chain Python has no other way to know).
func marshalPlanned(got *service.Planned, withChain bool) (string, error) {
	out := planned{Plan: got.Plan, Algo: got.Algo, PlanID: got.PlanID, RunID: got.RunID, InputShape: got.InputShape}
	if withChain && got.Chain != nil {
		b, err := got.Chain.MarshalIndent()
		if err != nil {
			return "", codedError(err)
		}
		out.ChainJSON = string(b)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return "", codedError(err)
	}
	return string(b), nil
}
