package chainplan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
)

// InputSaved reports whether the stage's backward needs its input a_{ℓ-1}: an operation of
// its forward saved the input or a view of it. Unknown (version 1) means yes.
func (s *Stage) InputSaved() bool { return s.SavesInput == nil || *s.SavesInput }

// OutputSaved reports whether the stage's backward needs its output a_ℓ: an operation of its
// forward saved the output or a view of it. Unknown (version 1) means yes.
func (s *Stage) OutputSaved() bool { return s.SavesOutput == nil || *s.SavesOutput }

// Recompute returns u_R, the time of the recomputation that runs right before the stage's
// backward when its first forward kept nothing (F_all immediately followed by B): it
// regenerates the saved tensors and stops as soon as it has them. Unknown (version 1)
// means the whole forward, u_F.
func (s *Stage) Recompute() float64 {
	if s.RecomputeTime == nil {
		return s.FwdTime
	}
	return *s.RecomputeTime
}

// RecomputeTmp returns o_R, the recomputation's temporary peak on top of what it leaves
// for the backward (ā_ℓ, less a_ℓ when the stage did not save it). Unknown means the whole
// forward's: o_F, plus a_ℓ when the recomputation leaves it out.
func (s *Stage) RecomputeTmp() int64 {
	if s.RecomputeTmpBytes != nil {
		return *s.RecomputeTmpBytes
	}
	if s.OutputSaved() {
		return s.FwdTmpBytes
	}
	return s.FwdTmpBytes + s.OutBytes
}

// Int returns a pointer to v, for the optional fields of a Stage.
func Int(v int64) *int64 { return &v }

// Bool returns a pointer to v, for the optional fields of a Stage.
func Bool(v bool) *bool { return &v }

// Float returns a pointer to v, for the optional fields of a Stage.
func Float(v float64) *float64 { return &v }

// Conservative returns a copy of c without the exact memory model and the options: the
// chain as version 1 reads it. The offloading planners use it, since their executor
// recomputes whole stages and holds every stage output until the stage's backward. A
// stage's forward temporary becomes the larger of o_F and o_R, so that a plan made from
// the copy also fits its budget on the checkpointing executor, whose recomputations stop
// early and peak at o_R (which may exceed o_F).
func (c *Chain) Conservative() *Chain {
	out := *c
	out.Format = ChainFormat
	out.Stages = make([]Stage, len(c.Stages))
	for i, s := range c.Stages {
		if s.RecomputeTmpBytes != nil && *s.RecomputeTmpBytes > s.FwdTmpBytes {
			s.FwdTmpBytes = *s.RecomputeTmpBytes
		}
		s.SavesInput, s.SavesOutput, s.RecomputeTime, s.RecomputeTmpBytes, s.Options = nil, nil, nil, nil, nil
		s.ReplayBytes = 0 // a version 2 field; the caller counts the states on the original chain
		out.Stages[i] = s
	}
	return &out
}

// ValidateOptions checks the options of stage i (1-based) of a chain, as Validate does:
// non-negative sizes and finite, non-negative times, and distinct node positions. It
// returns a *ChainError naming the option and field.
func ValidateOptions(i int, s *Stage) error {
	return validateExact(i, s)
}

// validateExact checks the version 2 fields of stage i (1-based) of a chain.
func validateExact(i int, s *Stage) error {
	bad := func(field, msg string) error { return &ChainError{Stage: i, Name: s.Name, Field: field, Msg: msg} }
	if s.RecomputeTime != nil {
		if msg := checkTime(*s.RecomputeTime); msg != "" {
			return bad("recompute_time", msg)
		}
	}
	if s.RecomputeTmpBytes != nil && *s.RecomputeTmpBytes < 0 {
		return bad("recompute_tmp_bytes", fmt.Sprintf("negative value %d", *s.RecomputeTmpBytes))
	}
	if s.ReplayBytes < 0 {
		return bad("replay_bytes", fmt.Sprintf("negative value %d", s.ReplayBytes))
	}
	for j, o := range s.Options {
		field := func(f string) string { return fmt.Sprintf("options[%d].%s", j, f) }
		if o.SavedBytes < 0 {
			return bad(field("saved_bytes"), fmt.Sprintf("negative value %d", o.SavedBytes))
		}
		if o.FwdTmpBytes < 0 {
			return bad(field("fwd_tmp_bytes"), fmt.Sprintf("negative value %d", o.FwdTmpBytes))
		}
		if msg := checkTime(o.RecomputeTime); msg != "" {
			return bad(field("recompute_time"), msg)
		}
		if err := validateForm(o, field, bad); err != nil {
			return err
		}
		seen := make(map[int]bool, len(o.Keep))
		for _, k := range o.Keep {
			if k < 0 {
				return bad(field("keep"), fmt.Sprintf("negative node position %d", k))
			}
			if seen[k] {
				return bad(field("keep"), fmt.Sprintf("node position %d twice", k))
			}
			seen[k] = true
		}
	}
	return nil
}

// validateForm checks the fields of a form option (StageOption.Form): its own times and
// backward temporaries, present on a form option only.
func validateForm(o StageOption, field func(string) string, bad func(string, string) error) error {
	own := map[string]bool{"fwd_time": o.FwdTime != nil, "bwd_time": o.BwdTime != nil, "bwd_tmp_bytes": o.BwdTmpBytes != nil}
	for _, f := range []string{"fwd_time", "bwd_time", "bwd_tmp_bytes"} {
		switch {
		case o.Form == "" && own[f]:
			return bad(field(f), "set on an option without a form (only a form option runs its own computation)")
		case o.Form != "" && !own[f]:
			return bad(field(f), fmt.Sprintf("missing on the form option %q", o.Form))
		}
	}
	if o.Form == "" {
		return nil
	}
	for f, t := range map[string]float64{"fwd_time": *o.FwdTime, "bwd_time": *o.BwdTime} {
		if msg := checkTime(t); msg != "" {
			return bad(field(f), msg)
		}
	}
	if *o.BwdTmpBytes < 0 {
		return bad(field("bwd_tmp_bytes"), fmt.Sprintf("negative value %d", *o.BwdTmpBytes))
	}
	return nil
}

// Option returns option j of stage k (1-based; option 0 keeps everything) as the sizes and
// times a planner reads: ā, o_F and the recomputation before the backward.
func (c *Chain) Option(k, j int) (savedBytes, fwdTmpBytes int64, recompute float64) {
	s := &c.Stages[k-1]
	if j == 0 {
		return s.SavedBytes, s.FwdTmpBytes, 0
	}
	o := s.Options[j-1]
	return o.SavedBytes, o.FwdTmpBytes, o.RecomputeTime
}

// optionFields are the fields of a StageOption and whether each is a whole number of bytes.
var optionFields = map[string]bool{"saved_bytes": true, "fwd_tmp_bytes": true, "recompute_time": false}

// formFields are the optional fields of a form option (StageOption.Form), checked by
// validateForm.
var formFields = map[string]bool{"form": true, "fwd_time": true, "bwd_time": true, "bwd_tmp_bytes": true}

// checkV2Field returns what is wrong with the raw value of a version 2 stage field, or "".
func checkV2Field(field string, v json.RawMessage) string {
	switch field {
	case "saves_input", "saves_output":
		var b bool
		if json.Unmarshal(v, &b) != nil || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			return fmt.Sprintf("%s is not true or false", truncate(string(v), 40))
		}
	case "recompute_time":
		return checkNumber(v, false)
	case "recompute_tmp_bytes", "replay_bytes":
		return checkNumber(v, true)
	case "options":
		var opts []map[string]json.RawMessage
		if err := json.Unmarshal(v, &opts); err != nil {
			return "not a list of options (objects with saved_bytes, fwd_tmp_bytes, recompute_time and keep)"
		}
		for j, o := range opts {
			for f, integer := range optionFields {
				raw, ok := o[f]
				if !ok {
					return fmt.Sprintf("option %d: %s is missing", j, f)
				}
				if msg := checkNumber(raw, integer); msg != "" {
					return fmt.Sprintf("option %d: %s: %s", j, f, msg)
				}
			}
			keep, ok := o["keep"]
			if !ok {
				return fmt.Sprintf("option %d: keep is missing", j)
			}
			var nodes []int
			if json.Unmarshal(keep, &nodes) != nil {
				return fmt.Sprintf("option %d: keep is not a list of node positions", j)
			}
			for f := range o {
				if _, known := optionFields[f]; !known && f != "keep" && !formFields[f] {
					return fmt.Sprintf("option %d: unknown field %q", j, f)
				}
			}
		}
	}
	return ""
}

// ChoicesOf returns the StageChoice list of a sequence of c: one entry per stage that runs
// an option, in stage order, with the nodes the option keeps.
func ChoicesOf(c *Chain, seq []Op) []StageChoice {
	var out []StageChoice
	seen := map[int]bool{}
	for _, o := range seq {
		if o.Option == 0 || seen[o.Stage] || o.Stage > len(c.Stages) || o.Option > len(c.Stages[o.Stage-1].Options) {
			continue
		}
		seen[o.Stage] = true
		keep := append([]int(nil), c.Stages[o.Stage-1].Options[o.Option-1].Keep...)
		form := c.Stages[o.Stage-1].Options[o.Option-1].Form
		out = append(out, StageChoice{Stage: o.Stage, Option: o.Option, Keep: keep, Form: form})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Stage < out[j].Stage })
	return out
}
