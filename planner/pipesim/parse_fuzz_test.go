package pipesim_test

import (
	"errors"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/pipesim"
)

// FuzzParseStages: the schedule names and stage specifications of `chainplan pipesim`
// never panic the parsers, and what they accept is a known schedule, or a count in
// 1..layers, or layer ranges that cover the chain in order, one device each.
func FuzzParseStages(f *testing.F) {
	for _, s := range []string{"4", "1-4,5-9,10-12", "1,2-3", " 1 - 12 ", "0", "1-4,4-12", "1-3,5-12", "", "1-", "-1", "gpipe", "1f1b-flush"} {
		f.Add(s, 12)
	}
	f.Fuzz(func(t *testing.T, spec string, layers int) {
		if sched, err := pipesim.ParseSchedule(spec); err == nil && string(sched) != spec {
			t.Fatalf("ParseSchedule(%q) = %q", spec, sched)
		}
		layers = 1 + int(uint(layers)%1000)
		stages, count, err := pipesim.ParseStages(spec, layers)
		if err != nil {
			if !errors.Is(err, chainplan.ErrUnsupported) {
				t.Fatalf("ParseStages(%q, %d): %v does not wrap ErrUnsupported", spec, layers, err)
			}
			return
		}
		if stages == nil {
			if count < 1 || count > layers {
				t.Fatalf("ParseStages(%q, %d) = count %d", spec, layers, count)
			}
			return
		}
		next := 1
		for k, s := range stages {
			if s.First != next || s.Last < s.First || s.GPU != k {
				t.Fatalf("ParseStages(%q, %d) = %+v: stage %d does not follow", spec, layers, stages, k)
			}
			next = s.Last + 1
		}
		if next != layers+1 {
			t.Fatalf("ParseStages(%q, %d) = %+v: does not cover the chain", spec, layers, stages)
		}
	})
}
