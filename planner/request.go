package planner

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/chainplan/chainplan"
)

// Request says what to plan.
type Request struct {
	// Algo is the name of an entry of the registry (Entries); empty means "rotor".
	Algo string
	// BudgetBytes is the total activation memory, chain input included.
	BudgetBytes int64
	// Slots is the number of memory slots of the discretization (0: the algorithm's own
	// default, 500 for rotor; DESIGN.md). Algorithms without a grid ignore it.
	Slots int64
	// Segments fixes the segment count of "sequential" (0: the best that fits); refused
	// by the algorithms that do not take FieldSegments.
	Segments int
	// Bandwidth is the GPU↔host link bandwidth in bytes per second (bytes per time unit
	// of the chain) of the algorithms that need FieldBandwidth, the offloading ones; it
	// must be positive and finite for them and zero for the others.
	Bandwidth float64
}

// DefaultMultichainAlgo is the algorithm a request that names none plans towers joined at
// the loss with (Python's plan() of a towers profile, docs/multichain.md).
const DefaultMultichainAlgo = "multichain"

// DefaultAlgo is the algorithm a request that names none plans chain c with: "rotor-ops"
// when a stage has operation-level options (a model captured from its graph:
// docs/rotor.md, "Which algorithm"), else "rotor".
func DefaultAlgo(c *chainplan.Chain) string {
	for _, st := range c.Stages {
		if len(st.Options) > 0 {
			return "rotor-ops"
		}
	}
	return "rotor"
}

func (r Request) algo() string {
	if r.Algo == "" {
		return "rotor"
	}
	return r.Algo
}

// check validates the request against the registry and returns the algorithm's entry. The
// name comes first: a misspelt name must be reported as such, not as a bandwidth or
// segments problem of the algorithm it is not. Names are case-sensitive, lower-case as in
// the table: they are stored with every plan and compared in SQL (plans.algo), where one
// spelling per algorithm keeps queries simple; a name that differs only in case gets a hint.
func (r Request) check() (Entry, error) {
	e, ok := Lookup(r.algo())
	if !ok {
		all := names(func(Entry) bool { return true })
		hint := ""
		if lower := strings.ToLower(r.Algo); slices.Contains(all, lower) {
			hint = fmt.Sprintf("names are lower-case: did you mean %q? ", lower)
		}
		return Entry{}, fmt.Errorf("%w: unknown algorithm %q (%swant one of %s)", chainplan.ErrUnsupported, r.Algo,
			hint, strings.Join(all, ", "))
	}
	if e.Multichain != nil {
		return Entry{}, fmt.Errorf("%w: algorithm %q plans towers joined at the loss: give it a bundle of the towers "+
			"(chainplan.multichain/v1; several --chain files and --loss on the command line)", chainplan.ErrUnsupported, e.Name)
	}
	if e.Family == Simulation {
		return Entry{}, fmt.Errorf("%w: %q is a pipeline schedule the simulator runs, not a sequence: use chainplan pipesim --schedule %s",
			chainplan.ErrUnsupported, e.Name, e.Name)
	}
	if e.Schedule == nil {
		return Entry{}, fmt.Errorf("%w: algorithm %q plans a %s, not a sequence: use its own entry point",
			chainplan.ErrUnsupported, e.Name, e.Family)
	}
	if r.Slots < 0 {
		return Entry{}, fmt.Errorf("%w: slots must be positive (got %d)", chainplan.ErrUnsupported, r.Slots)
	}
	if r.Segments != 0 && !e.Reads(FieldSegments) {
		return Entry{}, fmt.Errorf("%w: segments apply to %s only (got algorithm %q)",
			chainplan.ErrUnsupported, readers(FieldSegments), e.Name)
	}
	switch b := r.Bandwidth; {
	case slices.Contains(e.Needs, FieldBandwidth) && (math.IsNaN(b) || math.IsInf(b, 0) || b <= 0):
		return Entry{}, fmt.Errorf("%w: algorithm %q needs a bandwidth: a positive, finite number of bytes per second (got %v)",
			chainplan.ErrUnsupported, e.Name, b)
	case !e.Reads(FieldBandwidth) && b != 0:
		return Entry{}, fmt.Errorf("%w: a bandwidth applies to %s only (%s), not to %q",
			chainplan.ErrUnsupported, readers(FieldBandwidth), strings.Join(names(readsField(FieldBandwidth)), ", "), e.Name)
	}
	return e, nil
}

// readers names the algorithms that read f for a message: "the sequential algorithm" for
// one, "the offloading algorithms" for a family, or their names.
func readers(f Field) string {
	all := names(readsField(f))
	if len(all) == 1 {
		return fmt.Sprintf("the %s algorithm", all[0])
	}
	var fams []string
	for _, e := range entries {
		if e.Reads(f) && !slices.Contains(fams, string(e.Family)) {
			fams = append(fams, string(e.Family))
		}
	}
	// Name a family only when it reads f throughout.
	for _, fam := range fams {
		if len(names(func(e Entry) bool { return string(e.Family) == fam && !e.Reads(f) })) > 0 {
			return "the algorithms " + strings.Join(all, ", ")
		}
	}
	return "the " + strings.Join(fams, " and ") + " algorithms"
}

func readsField(f Field) func(Entry) bool { return func(e Entry) bool { return e.Reads(f) } }
