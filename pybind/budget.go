package pybind

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/internal/service"
)

// MinBudget returns the smallest budget in bytes at which the request's algorithm finds a
// schedule for the chain of the source of callJSON ({"source": {...}, "request": {...}},
// the request's budget ignored).
func MinBudget(callJSON string) (budget int64, err error) {
	defer recoverError(&err)
	var c call
	if err := readCall(callJSON, "min_budget", &c); err != nil {
		return 0, codedError(err)
	}
	req, err := parseRequest(c.request())
	if err != nil {
		return 0, codedError(err)
	}
	err = withSource(c.Source, func(ctx context.Context, in *service.Input) error {
		ch, err := in.ChainOf(ctx)
		if err != nil {
			return err
		}
		budget, err = service.MinBudget(ch, req)
		return err
	})
	return budget, err
}

// parseRequest reads a request: service.Request's JSON form ({"algo", "budget" or
// "budget_bytes" and "min_budget", "slots", "segments", "bandwidth", "source"}), whose
// source is "python" when left out.
func parseRequest(s string) (service.Request, error) {
	r := service.Request{Source: service.SourcePython}
	switch err := json.Unmarshal([]byte(s), &r); {
	case errors.Is(err, service.ErrBadInput): // a field's value: the message names it
		return service.Request{}, err
	case err != nil: // the JSON itself
		return service.Request{}, fmt.Errorf("%w: request: %v", errBadRequest, err)
	}
	return r, nil
}

// ParseBytes reads a byte size such as "2GiB", "512MB", "1e9" or "123456" with
// chainplan.ParseBytes, so that Python and the CLI accept the same spellings.
func ParseBytes(s string) (n int64, err error) {
	defer recoverError(&err)
	n, err = chainplan.ParseBytes(s)
	if err != nil {
		return 0, codedError(badRequest(err))
	}
	return n, nil
}

// ParseBandwidth reads a bandwidth in bytes per second such as "12GB/s", "1.5GiB/s" or
// "1.2e10" with chainplan.ParseBandwidth, the rule of the CLI's --bandwidth.
func ParseBandwidth(s string) (bps float64, err error) {
	defer recoverError(&err)
	bps, err = chainplan.ParseBandwidth(s)
	if err != nil {
		return 0, codedError(badRequest(err))
	}
	return bps, nil
}
