package planner

import (
	"fmt"
	"time"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/contiguous"
	"github.com/chainplan/chainplan/planner/madpipe"
	"github.com/chainplan/chainplan/planner/pipedream"
	"github.com/chainplan/chainplan/planner/pipeline"
)

const formatPipeline = "chainplan.pipeline/v1"

// PipelineRequest says how to plan a chain over several devices.
type PipelineRequest struct {
	// Algo is a Pipeline-family entry's name.
	Algo string
	// Options are the platform (devices, memory per device, bandwidth) and the memory
	// model (weight copies, activation model); Options.MemoryBytes is ignored when
	// MinMemory is set.
	Options pipeline.Options
	// MinMemory plans at the algorithm's smallest memory per device.
	MinMemory bool
	// TimeLimit bounds a solver's time (madpipe's scheduling MILP); 0: the algorithm's default.
	TimeLimit time.Duration
	// RequireSolver refuses the fallback of an algorithm whose solver is missing (madpipe
	// without a MILP solver returns the best contiguous plan, marked Fallback): an error
	// wrapping milp.ErrNoSolver instead. Algorithms that run no solver ignore it.
	RequireSolver bool
}

// PipelineFuncs are the functions of an algorithm whose plans are chainplan.pipeline/v1
// documents. Every plan they return has passed pipeline.Validate (pipeline.Finalize).
type PipelineFuncs struct {
	// Solve plans pr at its memory per device; notes are sentences for the user (which
	// candidate won, a solver that is missing and how to install it).
	Solve func(pr *pipeline.Problem, req PipelineRequest) (plan *pipeline.Plan, notes []string, err error)
	// MinMemory returns the smallest memory per device at which Solve succeeds; nil when
	// the algorithm has no such search.
	MinMemory func(pr *pipeline.Problem, req PipelineRequest) (int64, error)
}

func pipelineEntry(name, summary string, f *PipelineFuncs) Entry {
	return Entry{Name: name, Family: Pipeline, Format: formatPipeline, Summary: summary, Pipeline: f}
}

var (
	madpipeFuncs = &PipelineFuncs{
		Solve: func(pr *pipeline.Problem, req PipelineRequest) (*pipeline.Plan, []string, error) {
			tr := &madpipe.Trace{}
			p, err := madpipe.Solve(pr, madpipe.Options{TimeLimit: req.TimeLimit, Trace: tr, RequireSolver: req.RequireSolver})
			return p, tr.Notes, err
		},
		// The smallest memory found below the contiguous minimum: success is not monotone
		// in memory there, so it is the best found, not a proven minimum.
		MinMemory: func(pr *pipeline.Problem, req PipelineRequest) (int64, error) {
			return madpipe.MinMemory(pr, madpipe.Options{TimeLimit: req.TimeLimit, RequireSolver: req.RequireSolver})
		},
	}
	contiguousFuncs = &PipelineFuncs{
		Solve: func(pr *pipeline.Problem, _ PipelineRequest) (*pipeline.Plan, []string, error) {
			p, err := contiguous.Solve(pr)
			return p, nil, err
		},
		MinMemory: func(pr *pipeline.Problem, _ PipelineRequest) (int64, error) { return contiguous.MinMemory(pr) },
	}
	pipedreamFuncs = &PipelineFuncs{
		Solve: func(pr *pipeline.Problem, _ PipelineRequest) (*pipeline.Plan, []string, error) {
			p, err := pipedream.Solve(pr, pipedream.Options{})
			return p, nil, err
		},
		MinMemory: func(pr *pipeline.Problem, _ PipelineRequest) (int64, error) {
			return pipedream.MinMemory(pr, pipedream.Options{})
		},
	}
)

// PipelineAlgos returns the names of the Pipeline-family entries, in table order.
func PipelineAlgos() []string { return names(func(e Entry) bool { return e.Pipeline != nil }) }

// lookupPipeline returns the pipeline entry named algo, or an error wrapping
// ErrUnsupported that lists the pipeline algorithms.
func lookupPipeline(algo string) (Entry, error) {
	e, ok := Lookup(algo)
	if !ok || e.Pipeline == nil {
		what := "unknown pipeline algorithm"
		if ok {
			what = fmt.Sprintf("algorithm %q plans a %s, not a pipeline:", algo, e.Family)
			return Entry{}, fmt.Errorf("%w: %s want one of %v", chainplan.ErrUnsupported, what, PipelineAlgos())
		}
		return Entry{}, fmt.Errorf("%w: %s %q (want one of %v)", chainplan.ErrUnsupported, what, algo, PipelineAlgos())
	}
	return e, nil
}

// SolvePipeline plans chain c over several devices with req's algorithm: at req's memory
// per device or, with req.MinMemory, at the algorithm's smallest, found directly and then
// solved once. Errors: the chain's *chainplan.ChainError, a *pipeline.OptionError naming
// the option, a *pipeline.InfeasibleError with the smallest memory that fits (or a lower
// bound), ErrUnsupported for an unknown algorithm or a smallest memory the algorithm
// cannot search for.
func SolvePipeline(c *chainplan.Chain, req PipelineRequest) (*pipeline.Plan, []string, error) {
	e, err := lookupPipeline(req.Algo)
	if err != nil {
		return nil, nil, err
	}
	pr, err := pipeline.NewProblem(c, req.Options)
	if err != nil {
		return nil, nil, err
	}
	if req.MinMemory {
		if e.Pipeline.MinMemory == nil {
			return nil, nil, fmt.Errorf("%w: %s has no smallest-memory search: give the memory per device in bytes",
				chainplan.ErrUnsupported, e.Name)
		}
		m, err := e.Pipeline.MinMemory(pr, req)
		if err != nil {
			return nil, nil, err
		}
		pr = pr.WithMemory(m)
	}
	return e.Pipeline.Solve(pr, req)
}
