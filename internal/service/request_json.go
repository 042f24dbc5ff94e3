package service

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/chainplan/chainplan"
)

// requestJSON is Request's JSON form, what the bindings decode Python's request into:
// {"algo", "budget", "slots", "segments", "bandwidth", "source"}. "budget" is a number of
// bytes, a size with the CLI's rule ("2GiB", "1e9") or "min"; "bandwidth" a number of bytes
// per second or a string such as "12GB/s" (chainplan.ParseBytes, ParseBandwidth), so that a
// caller sends what its user wrote and the sizes are read once, here. "budget_bytes" and
// "min_budget", the earlier spelling of the budget, still read.
type requestJSON struct {
	Algo        string          `json:"algo"`
	Budget      json.RawMessage `json:"budget"`
	BudgetBytes int64           `json:"budget_bytes"`
	MinBudget   bool            `json:"min_budget"`
	Slots       int64           `json:"slots"`
	Segments    int             `json:"segments"`
	Bandwidth   json.RawMessage `json:"bandwidth"`
	Source      *string         `json:"source"`
}

// UnmarshalJSON reads a request's JSON form strictly: an unknown field, a budget or a
// bandwidth that does not read is an error naming it, wrapping ErrBadInput. A field left
// out keeps the value r had (Source, set by the front end before decoding, in particular);
// the request itself is checked against the registry when planning.
func (r *Request) UnmarshalJSON(b []byte) error {
	var w requestJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return &inputError{"request: " + err.Error()}
	}
	r.Algo, r.Slots, r.Segments = w.Algo, w.Slots, w.Segments
	r.BudgetBytes, r.Min = w.BudgetBytes, w.MinBudget
	if w.Source != nil {
		r.Source = *w.Source
	}
	if err := readBudget(w.Budget, r); err != nil {
		return err
	}
	return readBandwidth(w.Bandwidth, &r.Bandwidth)
}

// readBudget reads "budget" into r: "min" sets Min, a size string or a whole number of
// bytes sets BudgetBytes; absent or null leaves r alone.
func readBudget(raw json.RawMessage, r *Request) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if strings.EqualFold(strings.TrimSpace(s), "min") {
			r.Min = true
			return nil
		}
		n, err := chainplan.ParseBytes(s)
		if err != nil {
			return &inputError{fmt.Sprintf("budget: %s", strings.TrimPrefix(err.Error(), "chainplan: "))}
		}
		r.BudgetBytes = n
		return nil
	}
	if err := json.Unmarshal(raw, &r.BudgetBytes); err != nil {
		return &inputError{fmt.Sprintf("budget must be a whole number of bytes, a size such as \"2GiB\" or \"min\" (got %s)", raw)}
	}
	return nil
}

// readBandwidth reads "bandwidth": a number of bytes per second or a string such as
// "12GB/s"; absent or null leaves out alone.
func readBandwidth(raw json.RawMessage, out *float64) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		bps, err := chainplan.ParseBandwidth(s)
		if err != nil {
			return &inputError{fmt.Sprintf("bandwidth: %s", strings.TrimPrefix(err.Error(), "chainplan: "))}
		}
		*out = bps
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return &inputError{fmt.Sprintf("bandwidth must be a number of bytes per second or a string such as \"12GB/s\" (got %s)", raw)}
	}
	return nil
}
