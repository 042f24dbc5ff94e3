package planner

import (
	"encoding/json"
	"slices"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/rotor"
)

// Family says what kind of plan an algorithm returns, and so which functions of its Entry
// are set.
type Family string

// The families. Checkpointing and offloading plans are a chainplan.Plan (DESIGN.md,
// "Sequence"; offloading plans add the offload section of docs/formats-schedule.md) and
// their entries set Entry.Schedule. Pipeline plans (chainplan.pipeline/v1, issue 12) get
// a function set of their own beside it.
const (
	Checkpointing Family = "checkpointing"
	Offloading    Family = "offloading"
	Pipeline      Family = "pipeline"
	// Multichain plans K towers joined at the loss (chainplan.MultiChain, issue 24): a
	// chainplan.Plan whose operations name their branch, with its multichain section
	// (docs/multichain.md); its entries set Entry.Multichain.
	Multichain Family = "multichain"
	// Simulation entries are the pipeline schedules planner/pipesim runs (issue 25): their
	// result is a chainplan.pipesim/v1 document, and they set Entry.Simulation.
	Simulation Family = "simulation"
)

// Field names a request field an algorithm reads, spelt as in the JSON requests of the
// Python bindings.
type Field string

// The request fields beyond the budget.
const (
	// FieldSlots is Request.Slots, the memory discretization. It is never refused: the
	// CLI always sends one, and the algorithms without a grid ignore it.
	FieldSlots Field = "slots"
	// FieldSegments is Request.Segments; refused by the algorithms that do not read it.
	FieldSegments Field = "segments"
	// FieldBandwidth is Request.Bandwidth; refused by the algorithms that do not read it.
	FieldBandwidth Field = "bandwidth"
)

// Entry describes one algorithm: what the CLI's help, the request check, the Python
// bindings and the tests know about it. The table (algorithms.go) is the only list of
// algorithm names.
type Entry struct {
	// Name is the lower-case name requests, plans and the store use.
	Name string `json:"name"`
	// Family says what the plan holds.
	Family Family `json:"family"`
	// Format names the plan document: "chainplan.schedule/v1" (DESIGN.md, "Sequence"),
	// "chainplan.schedule/v1+offload" (with the offload section) or, for pipelines,
	// "chainplan.pipeline/v1".
	Format string `json:"format"`
	// Summary is one line of help text.
	Summary string `json:"summary"`
	// Needs lists the request fields the algorithm requires; Takes those it reads when
	// given. A field in neither is refused when set (FieldSlots excepted).
	Needs []Field `json:"needs"`
	Takes []Field `json:"takes"`
	// Schedule holds the functions of the checkpointing and offloading algorithms; nil
	// for the other families.
	Schedule *ScheduleFuncs `json:"-"`
	// Pipeline holds the functions of the pipeline algorithms; nil for the other families.
	Pipeline *PipelineFuncs `json:"-"`
	// Multichain holds the functions of the multichain algorithms; nil for the other
	// families.
	Multichain *MultichainFuncs `json:"-"`
	// Parallel holds the functions of the parallel planners (family Parallel); nil for
	// the other families.
	Parallel *ParallelFuncs `json:"-"`
	// Simulation holds the functions of the simulated schedules; nil for the other
	// families.
	Simulation *SimulationFuncs `json:"-"`
}

// ScheduleFuncs are the functions of an algorithm whose plans are a chainplan.Plan. The
// Request they get has passed the registry's check; its BudgetBytes is positive for Solve
// and ignored by the others.
type ScheduleFuncs struct {
	// Solve plans c within req.BudgetBytes. Errors: *chainplan.InfeasibleError carrying
	// the smallest feasible budget, ErrInvalidChain, ErrUnsupported.
	Solve func(c *chainplan.Chain, req Request) (*chainplan.Plan, error)
	// MinBudget returns the smallest budget at which Solve succeeds, asked directly: it
	// never solves at a budget known to be too small to read the answer from the error.
	MinBudget func(c *chainplan.Chain, req Request) (int64, error)
	// SolveMin returns Solve's plan at MinBudget's budget from one search. Nil means
	// MinBudget, then Solve once: for algorithms whose search keeps nothing Solve can use.
	SolveMin func(c *chainplan.Chain, req Request) (*chainplan.Plan, error)
	// Simulate replays a plan of this family on c with a simulator independent of the
	// planner and checks it against limitBytes (negative: no limit). An invalid plan is
	// an error wrapping ErrInvalidPlan.
	Simulate func(c *chainplan.Chain, p *chainplan.Plan, limitBytes int64) (Replay, error)
	// Frontier, when set, gives the optimal makespan at every budget from one DP run.
	Frontier func(c *chainplan.Chain, req Request) (*rotor.Frontier, error)
}

// Replay is what Simulate measures on a valid plan, in exact bytes.
type Replay struct {
	Makespan  float64
	PeakBytes int64
}

// MarshalJSON writes the entry's description and whether it has a frontier: the table as
// the Python side reads it (pybind.Algorithms).
func (e Entry) MarshalJSON() ([]byte, error) {
	type desc Entry // without the method, so that Marshal does not recurse
	if e.Needs == nil {
		e.Needs = []Field{}
	}
	if e.Takes == nil {
		e.Takes = []Field{}
	}
	return json.Marshal(struct {
		desc
		Frontier bool `json:"frontier"`
	}{desc(e), e.Schedule != nil && e.Schedule.Frontier != nil})
}

// Entries returns the table, in the order help texts list it.
func Entries() []Entry { return slices.Clone(entries) }

// Lookup returns the entry of an algorithm by its exact name.
func Lookup(name string) (Entry, bool) {
	i := slices.IndexFunc(entries, func(e Entry) bool { return e.Name == name })
	if i < 0 {
		return Entry{}, false
	}
	return entries[i], true
}

// Reads reports whether the algorithm reads the request field f (needs or takes it).
func (e Entry) Reads(f Field) bool { return slices.Contains(e.Needs, f) || slices.Contains(e.Takes, f) }

// names returns the names of the entries for which keep holds, in table order.
func names(keep func(Entry) bool) []string {
	var out []string
	for _, e := range entries {
		if keep(e) {
			out = append(out, e.Name)
		}
	}
	return out
}
