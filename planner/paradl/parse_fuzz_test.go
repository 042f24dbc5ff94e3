package paradl_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/paradl"
)

// FuzzParseStrategies: `advise --strategies` never panics the parser; it accepts known
// strategies only, each once.
func FuzzParseStrategies(f *testing.F) {
	for _, s := range []string{"data,pipeline,df", "all", "", " data , data ", "data,,pipeline", "Data", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := paradl.ParseStrategies(s)
		if err != nil {
			if !errors.Is(err, chainplan.ErrUnsupported) {
				t.Fatalf("ParseStrategies(%q): %v does not wrap ErrUnsupported", s, err)
			}
			return
		}
		for i, st := range got {
			if !slices.Contains(paradl.Strategies, st) || slices.Contains(got[:i], st) {
				t.Fatalf("ParseStrategies(%q) = %v", s, got)
			}
		}
	})
}
