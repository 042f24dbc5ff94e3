package planner

import (
	"fmt"
	"strings"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/pipesim"
)

// SimulationFuncs are the functions of a pipeline schedule that planner/pipesim simulates.
type SimulationFuncs struct {
	// Simulate runs the schedule on su with o (whose Schedule it sets). Errors are
	// pipesim.Simulate's.
	Simulate func(su *pipesim.Setup, o pipesim.Options) (*pipesim.Result, error)
}

// simulationEntry is the entry of schedule s: its name, summary and simulator.
func simulationEntry(s pipesim.Schedule) Entry {
	return Entry{Name: string(s), Family: Simulation, Format: pipesim.Format, Summary: s.Summary(),
		Simulation: &SimulationFuncs{Simulate: simulatedSchedule(s).Simulate}}
}

// simulatedSchedule is a schedule of package pipesim, the simulator of the entry.
type simulatedSchedule pipesim.Schedule

// Simulate runs pipesim.Simulate with the schedule set in o.
func (s simulatedSchedule) Simulate(su *pipesim.Setup, o pipesim.Options) (*pipesim.Result, error) {
	o.Schedule = pipesim.Schedule(s)
	return pipesim.Simulate(su, o)
}

// Schedules returns the names of the Simulation-family entries, in table order.
func Schedules() []string { return names(func(e Entry) bool { return e.Simulation != nil }) }

// SimulatePipeline runs the schedule named name on su (chainplan pipesim). Errors: an
// unknown schedule wrapping ErrUnsupported (it lists the schedules), pipesim.Simulate's.
func SimulatePipeline(name string, su *pipesim.Setup, o pipesim.Options) (*pipesim.Result, error) {
	e, ok := Lookup(name)
	if !ok || e.Simulation == nil {
		what := fmt.Sprintf("unknown schedule %q", name)
		if ok {
			what = fmt.Sprintf("%q is a %s algorithm, not a schedule", name, e.Family)
		}
		return nil, fmt.Errorf("%w: %s (want one of %s)", chainplan.ErrUnsupported, what, strings.Join(Schedules(), ", "))
	}
	return e.Simulation.Simulate(su, o)
}
