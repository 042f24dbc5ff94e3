package chainplan

import (
	"encoding/json"
	"fmt"
)

// Plan is what a planner returns and what `chainplan solve` prints (DESIGN.md, "Sequence").
type Plan struct {
	Algo        string  `json:"algo"`
	Feasible    bool    `json:"feasible"`
	Makespan    float64 `json:"makespan"`
	PeakBytes   int64   `json:"peak_bytes"`
	BudgetBytes int64   `json:"budget_bytes"`
	Slots       int64   `json:"slots"`
	SolveMS     float64 `json:"solve_ms"`
	// Segments is the segment count of a "sequential" plan.
	Segments int  `json:"segments,omitempty"`
	Sequence []Op `json:"sequence"`
	// Offload is the offloading part of a pofo, offload-only or heuristic plan: the link
	// bandwidth, the ordered transfers and the timing (see Offload). Absent otherwise.
	Offload *Offload `json:"offload,omitempty"`
	// Chosen names, in the plan of an algorithm that computes several candidate schedules
	// and returns the fastest ("pofo": its DP, AUTOCAPPER, OPPORTUNIST, rotor), the
	// candidate whose schedule this is; Candidates lists every candidate's outcome. Both
	// are absent from other plans (docs/formats-schedule.md).
	Chosen     string      `json:"chosen,omitempty"`
	Candidates []Candidate `json:"candidates,omitempty"`
	// Choices lists the operation-level options the sequence runs (Op.Option > 0), one per
	// stage; absent when it runs none.
	Choices []StageChoice `json:"options,omitempty"`
	// Multichain is the multichain part of a plan for K towers joined at the loss (its
	// sequence's operations name their branch); absent from other plans.
	Multichain *MultichainPlan `json:"multichain,omitempty"`
}

// Candidate is the outcome of one schedule a planner compared before choosing
// (Plan.Chosen): its makespan and peak, replayed with the exact sizes in the plan's memory
// model, or Feasible false when it found no schedule within the budget. SolveMS is the
// time it took.
type Candidate struct {
	Algo      string  `json:"algo"`
	Feasible  bool    `json:"feasible"`
	Makespan  float64 `json:"makespan,omitempty"`
	PeakBytes int64   `json:"peak_bytes,omitempty"`
	SolveMS   float64 `json:"solve_ms"`
}

// ParsePlan decodes a plan document and checks that every operation is well formed: a
// format tag, when the document has one, must be a chainplan.schedule/v1 tag
// (ScheduleFormat and its +offload and +multichain forms). Whether the sequence is valid
// for a chain is the simulator's business.
func ParsePlan(data []byte) (*Plan, error) {
	// The planners write no tag; a document that carries one must be a version this
	// chainplan reads.
	format, present, err := jsonFormat(data)
	switch {
	case err != nil && !present:
		return nil, fmt.Errorf("%w: %s", ErrInvalidPlan, describeJSONError(data, err))
	case err != nil:
		return nil, fmt.Errorf("%w: field \"format\": %v", ErrInvalidPlan, err)
	case present:
		if err := CheckFormat(format, ErrInvalidPlan, ScheduleFormat, ScheduleFormatOffload, ScheduleFormatMultichain); err != nil {
			return nil, err
		}
	}
	var p Plan
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrInvalidPlan, describeJSONError(data, err))
	}
	if p.Sequence == nil {
		return nil, fmt.Errorf("%w: field \"sequence\" is missing", ErrInvalidPlan)
	}
	if p.Multichain != nil {
		if err := p.Multichain.check(p.Sequence); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidPlan, err)
		}
	}
	for i, o := range p.Sequence {
		if p.Multichain != nil {
			break
		}
		if !o.Kind.Valid() {
			return nil, fmt.Errorf("%w: sequence[%d]: unknown op %q (want F_all, F_ck, F_none or B)", ErrInvalidPlan, i, o.Kind)
		}
		if o.Stage < 1 {
			return nil, fmt.Errorf("%w: sequence[%d]: stage %d (stages are numbered from 1)", ErrInvalidPlan, i, o.Stage)
		}
		if o.Option < 0 || (o.Option > 0 && o.Kind != FAll) {
			return nil, fmt.Errorf("%w: sequence[%d]: option %d (an option is a number ≥ 1 on an F_all)", ErrInvalidPlan, i, o.Option)
		}
		if o.Branch != 0 {
			return nil, fmt.Errorf("%w: sequence[%d]: branch %d in a plan without a multichain section", ErrInvalidPlan, i, o.Branch)
		}
	}
	if p.Multichain != nil {
		for i, o := range p.Sequence {
			if o.Option != 0 {
				return nil, fmt.Errorf("%w: sequence[%d]: option %d in a multichain plan (its towers run no options)", ErrInvalidPlan, i, o.Option)
			}
		}
		if len(p.Choices) > 0 {
			return nil, fmt.Errorf("%w: options in a multichain plan (its towers run no options)", ErrInvalidPlan)
		}
	} else if err := checkChoices(p.Sequence, p.Choices); err != nil {
		return nil, fmt.Errorf("%w: options: %v", ErrInvalidPlan, err)
	}
	if p.Offload != nil {
		if err := p.Offload.check(len(p.Sequence)); err != nil {
			return nil, fmt.Errorf("%w: offload: %v", ErrInvalidPlan, err)
		}
	}
	return &p, nil
}

// ReadPlan reads a plan file.
func ReadPlan(path string) (*Plan, error) {
	data, err := ReadInput(path, "a plan file (JSON)")
	if err != nil {
		return nil, err
	}
	p, err := ParsePlan(data)
	if err != nil {
		return nil, fmt.Errorf("read plan %s: %w", path, err)
	}
	return p, nil
}

// checkChoices checks that choices lists exactly the options seq runs, one per stage.
func checkChoices(seq []Op, choices []StageChoice) error {
	want := map[int]int{}
	for _, o := range seq {
		if o.Option > 0 {
			if prev, ok := want[o.Stage]; ok && prev != o.Option {
				return fmt.Errorf("stage %d runs options %d and %d", o.Stage, prev, o.Option)
			}
			want[o.Stage] = o.Option
		}
	}
	seen := map[int]bool{}
	for i, c := range choices {
		opt, ok := want[c.Stage]
		switch {
		case seen[c.Stage]:
			return fmt.Errorf("[%d]: stage %d listed twice", i, c.Stage)
		case !ok:
			return fmt.Errorf("[%d]: the sequence runs no option of stage %d", i, c.Stage)
		case opt != c.Option:
			return fmt.Errorf("[%d]: stage %d runs option %d, not %d", i, c.Stage, opt, c.Option)
		}
		seen[c.Stage] = true
	}
	for st, opt := range want {
		if !seen[st] {
			return fmt.Errorf("option %d of stage %d is not listed", opt, st)
		}
	}
	return nil
}
