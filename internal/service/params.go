package service

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/chainplan/chainplan"
)

// Sources that record plans (Params.Source).
const (
	SourceCLI          = "cli"          // chainplan solve --run
	SourcePython       = "python"       // chainplan.plan
	SourceCheckpointed = "checkpointed" // chainplan.Checkpointed, planning on first use
)

var sources = []string{SourceCLI, SourcePython, SourceCheckpointed}

// Budget is the budget a plan was asked for: the smallest feasible one, or bytes.
type Budget struct {
	Min    bool  // "min": the algorithm's smallest feasible budget
	Faster bool  // "faster": a pipeline's smallest memory faster than one device
	Bytes  int64 // the budget in bytes, when neither
}

// MarshalJSON writes "min", "faster" or the number of bytes.
func (b Budget) MarshalJSON() ([]byte, error) {
	switch {
	case b.Min:
		return []byte(`"min"`), nil
	case b.Faster:
		return []byte(`"faster"`), nil
	}
	return strconv.AppendInt(nil, b.Bytes, 10), nil
}

// UnmarshalJSON reads "min", a number of bytes, or a size as the CLI wrote it before the
// service existed ("2GiB": chainplan.ParseBytes).
func (b *Budget) UnmarshalJSON(data []byte) error {
	if len(data) > 0 && data[0] != '"' {
		*b = Budget{}
		if err := json.Unmarshal(data, &b.Bytes); err != nil {
			return fmt.Errorf("budget: %w", err)
		}
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("budget: %w", err)
	}
	switch s {
	case "min":
		*b = Budget{Min: true}
		return nil
	case "faster":
		*b = Budget{Faster: true}
		return nil
	}
	n, err := chainplan.ParseBytes(s)
	if err != nil {
		return fmt.Errorf("budget: %w", err)
	}
	*b = Budget{Bytes: n}
	return nil
}

// String returns "min", "faster" or the size ("2 GiB").
func (b Budget) String() string {
	switch {
	case b.Min:
		return "min"
	case b.Faster:
		return "faster"
	}
	return chainplan.FormatBytes(b.Bytes)
}

// Params is the one parameter set stored with every plan (plans.params_json), the same
// whichever front end asked; docs/sql.md documents the keys. Where the request left a
// choice to the algorithm (budget "min", segments 0), the plan's own value is kept beside
// the request's, so that the plan can be computed again; slots are the plan's (the
// algorithm's default when the request gave none), whatever the front end's default.
type Params struct {
	Algo           string  `json:"algo"`                  // the algorithm asked for
	Budget         Budget  `json:"budget"`                // asked: "min" or bytes
	BudgetBytes    int64   `json:"budget_bytes"`          // used: the plan's budget
	Slots          int64   `json:"slots"`                 // used: the plan's discretization, 0 for none
	Segments       int     `json:"segments"`              // asked: segments of sequential, 0 for the best
	ChosenSegments int     `json:"chosen_segments"`       // used: the plan's segments, 0 when not segmented
	Bandwidth      float64 `json:"bandwidth_bytes_per_s"` // asked: the link of the offloading algorithms, 0 for none
	Source         string  `json:"source"`                // who asked: cli, python or checkpointed
}

// ParamsFor returns the parameters recorded for plan p computed for req.
func ParamsFor(req Request, p *chainplan.Plan) Params {
	prm := Params{Algo: cmp.Or(req.Algo, p.Algo), BudgetBytes: p.BudgetBytes, Slots: p.Slots,
		Segments: req.Segments, ChosenSegments: p.Segments, Bandwidth: req.Bandwidth, Source: req.Source}
	if req.Min {
		prm.Budget = Budget{Min: true}
	} else {
		prm.Budget = Budget{Bytes: req.BudgetBytes}
	}
	return prm
}

// legacyParams is every key a plans.params_json has held: the service's, and
// "min_budget" of the bindings before it (release 0.1). Pointers tell a missing key.
type legacyParams struct {
	Algo           *string  `json:"algo"`
	Budget         *Budget  `json:"budget"`
	BudgetBytes    *int64   `json:"budget_bytes"`
	Slots          *int64   `json:"slots"`
	Segments       *int     `json:"segments"`
	ChosenSegments *int     `json:"chosen_segments"`
	Bandwidth      *float64 `json:"bandwidth_bytes_per_s"`
	Source         *string  `json:"source"`
	MinBudget      *bool    `json:"min_budget"`
}

// ParamsOf reads the parameters stored with plan p, in the service's shape or in an
// earlier one, filling what an earlier shape lacks from the plan itself. Release 0.1's
// CLI stored {"algo", "budget" (the --budget text), "slots", "segments" and
// "chosen_segments" when set}, its bindings {"algo", "budget_bytes", "slots", "segments",
// "min_budget", "source": "python"}; a plan without a source was stored by the CLI.
func ParamsOf(raw json.RawMessage, p *chainplan.Plan) (Params, error) {
	var l legacyParams
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	if err := json.Unmarshal(raw, &l); err != nil {
		return Params{}, fmt.Errorf("plan parameters %s: %w", raw, err)
	}
	prm := Params{Algo: p.Algo, BudgetBytes: p.BudgetBytes, Slots: p.Slots, ChosenSegments: p.Segments,
		Source: SourceCLI}
	if p.Offload != nil {
		prm.Bandwidth = p.Offload.BandwidthBytesPerS
	}
	set(&prm.Algo, l.Algo)
	set(&prm.BudgetBytes, l.BudgetBytes)
	set(&prm.Slots, l.Slots)
	set(&prm.Segments, l.Segments)
	set(&prm.ChosenSegments, l.ChosenSegments)
	set(&prm.Bandwidth, l.Bandwidth)
	set(&prm.Source, l.Source)
	switch {
	case l.Budget != nil:
		prm.Budget = *l.Budget
	case l.MinBudget != nil && *l.MinBudget:
		prm.Budget = Budget{Min: true}
	default:
		prm.Budget = Budget{Bytes: prm.BudgetBytes}
	}
	return prm, nil
}

// set copies *from into to when the key was present.
func set[T any](to *T, from *T) {
	if from != nil {
		*to = *from
	}
}
