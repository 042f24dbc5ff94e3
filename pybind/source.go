package pybind

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/chainplan/chainplan/internal/service"
)

// call is the one argument of every family's entry (Plan, Frontier, MinBudget,
// PlotFrontier, PlotTimeline, PlanTrace, Chain, Pipeline, Pipesim, Advise, Search3D): {"source":
// service.Source's JSON form (run_id | profile_path | chain_path | path | chain, with
// db_env and home), "request": the family's request}. Python builds the source from the
// type of what the user passed (chainplan/source.py) and never sends a chain it got from
// Go: Go reads every source itself, once, in service.Resolve.
type call struct {
	Source  service.Source  `json:"source"`
	Request json.RawMessage `json:"request"`
}

// readCall decodes callJSON strictly into v (a call, or a struct embedding one); what
// names the entry in the message.
func readCall(callJSON, what string, v any) error {
	if err := strictUnmarshal(callJSON, v); err != nil {
		return badRequest(fmt.Errorf("%s call: %v", what, err))
	}
	return nil
}

// request is the call's request, "{}" when it was left out.
func (c *call) request() string {
	if len(c.Request) == 0 {
		return "{}"
	}
	return string(c.Request)
}

// withSource resolves src (service.Resolve; a stored run in the database src names, open
// for the life of the process) and runs fn on it; the error comes back coded.
func withSource(src service.Source, fn func(ctx context.Context, in *service.Input) error) error {
	if err := src.Check(); err != nil {
		return codedError(err)
	}
	if !src.Stored() {
		ctx := context.Background()
		in, err := service.Resolve(ctx, nil, src)
		if err != nil {
			return codedError(fileError(err))
		}
		return codedError(fn(ctx, in))
	}
	db, err := src.DB()
	if err != nil {
		return codedError(err)
	}
	return withService(db, false, func(ctx context.Context, s *service.Service) error {
		in, err := service.Resolve(ctx, s, src)
		if err != nil {
			return err
		}
		return fn(ctx, in)
	})
}

// Chain returns the chainplan.chain/v1 JSON of the source of callJSON ({"source": {...}}):
// a stored run's chain, a profile file's, a chain file's (its text as the file holds it). It
// is for reading the chain in Python (the stages a model is split at, a stored run's
// shapes); no entry takes it back, since each reads its source itself.
func Chain(callJSON string) (chain string, err error) {
	defer recoverError(&err)
	var c call
	if err := readCall(callJSON, "chain", &c); err != nil {
		return "", codedError(err)
	}
	err = withSource(c.Source, func(ctx context.Context, in *service.Input) error {
		ch, err := in.ChainOf(ctx)
		if err != nil {
			return err
		}
		if in.Document != nil {
			chain = string(in.Document)
			return nil
		}
		b, err := ch.MarshalIndent()
		chain = string(b)
		return err
	})
	return chain, err
}
