package planner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/contiguous"
	"github.com/chainplan/chainplan/planner/madpipe"
	"github.com/chainplan/chainplan/planner/pipedream"
	"github.com/chainplan/chainplan/planner/pipeline"
)

const formatPipeline = "chainplan.pipeline/v1"

// DefaultPipelineAlgo is the pipeline algorithm a request that names none gets, in the CLI
// and in Python alike.
const DefaultPipelineAlgo = madpipe.Algo

// pipelineAlgo returns the algorithm req names, or the default one.
func pipelineAlgo(req pipeplan.Request) string {
	if req.Algo == "" {
		return DefaultPipelineAlgo
	}
	return req.Algo
}

// PipelineFuncs are the functions of an algorithm whose plans are chainplan.pipeline/v1
// documents. Every plan they return has passed pipeline.Validate (pipeline.Finalize).
type PipelineFuncs struct {
	// Solve plans pr at its memory per device; notes are sentences for the user (which
	// candidate won, a solver that is missing and how to install it).
	Solve func(pr *pipeline.Problem, req pipeplan.Request) (plan *pipeplan.Plan, notes []string, err error)
	// MinMemory returns the smallest memory per device at which Solve succeeds; nil when
	// the algorithm has no such search.
	MinMemory func(pr *pipeline.Problem, req pipeplan.Request) (int64, error)
}

func pipelineEntry(name, summary string, f *PipelineFuncs) Entry {
	return Entry{Name: name, Family: Pipeline, Format: formatPipeline, Summary: summary, Pipeline: f}
}

// solveMadPipe runs madpipe.Solve with req's time limit and solver rule; the notes are
// its trace's (a missing solver and how to install one).
func solveMadPipe(pr *pipeline.Problem, req pipeplan.Request) (*pipeplan.Plan, []string, error) {
	tr := &madpipe.Trace{}
	p, err := madpipe.Solve(pr, madpipe.Options{TimeLimit: req.TimeLimit, Trace: tr, RequireSolver: req.RequireSolver})
	return p, tr.Notes, err
}

// minMemoryMadPipe runs madpipe.MinMemory: the smallest memory at which solveMadPipe
// plans, to the byte, assuming success monotone in memory below the contiguous minimum
// (checked by byte scans, not proven).
func minMemoryMadPipe(pr *pipeline.Problem, req pipeplan.Request) (int64, error) {
	return madpipe.MinMemory(pr, madpipe.Options{TimeLimit: req.TimeLimit, RequireSolver: req.RequireSolver})
}

// solveContiguous runs contiguous.Solve.
func solveContiguous(pr *pipeline.Problem, _ pipeplan.Request) (*pipeplan.Plan, []string, error) {
	p, err := contiguous.Solve(pr)
	return p, nil, err
}

// minMemoryContiguous runs contiguous.MinMemory.
func minMemoryContiguous(pr *pipeline.Problem, _ pipeplan.Request) (int64, error) {
	return contiguous.MinMemory(pr)
}

// solvePipeDream runs pipedream.Solve.
func solvePipeDream(pr *pipeline.Problem, _ pipeplan.Request) (*pipeplan.Plan, []string, error) {
	p, err := pipedream.Solve(pr, pipedream.Options{})
	return p, nil, err
}

// minMemoryPipeDream runs pipedream.MinMemory.
func minMemoryPipeDream(pr *pipeline.Problem, _ pipeplan.Request) (int64, error) {
	return pipedream.MinMemory(pr, pipedream.Options{})
}

// PipelineAlgos returns the names of the Pipeline-family entries, in table order.
func PipelineAlgos() []string { return names(func(e Entry) bool { return e.Pipeline != nil }) }

// lookupPipeline returns the pipeline entry named algo, or an error wrapping
// ErrUnsupported that lists the pipeline algorithms. It is the one check of a pipeline
// algorithm's name: the CLI, the service and the bindings pass the name through to
// SolvePipeline as given, so every front end reports a misspelt name in these words.
func lookupPipeline(algo string) (Entry, error) {
	e, ok := Lookup(algo)
	if ok && e.Pipeline != nil {
		return e, nil
	}
	all := PipelineAlgos()
	msg := fmt.Sprintf("unknown pipeline algorithm %q (want %s)", algo, strings.Join(all, ", "))
	switch lower := strings.ToLower(algo); {
	case ok:
		msg += fmt.Sprintf(": %s is a %s algorithm", algo, e.Family)
	case lower != algo && slices.Contains(all, lower):
		msg += fmt.Sprintf(": names are lower-case: did you mean %q?", lower)
	}
	return Entry{}, fmt.Errorf("%w: %s", chainplan.ErrUnsupported, msg)
}

// SolvePipeline plans chain c over several devices with req's algorithm: at req's memory
// per device or, with req.MinMemory, at the algorithm's smallest, found directly and then
// solved once (req.FasterMemory: at the smallest memory of a plan faster than one device).
// The plan carries its speed-up references (SequentialTime, UnconstrainedPeriod). Errors:
// the chain's *chainplan.ChainError, a *pipeplan.OptionError naming the option, a
// *pipeplan.InfeasibleError with the smallest memory that fits, ErrUnsupported for an
// unknown algorithm or a smallest memory the algorithm cannot search for.
func SolvePipeline(c *chainplan.Chain, req pipeplan.Request) (*pipeplan.Plan, []string, error) {
	e, err := lookupPipeline(pipelineAlgo(req))
	if err != nil {
		return nil, nil, err
	}
	pr, err := pipeline.NewProblem(c, req.Options)
	if err != nil {
		return nil, nil, err
	}
	if err := pr.CheckPlanning(); err != nil {
		return nil, nil, err
	}
	var notes []string
	switch {
	case req.MinMemory && req.FasterMemory:
		return nil, nil, fmt.Errorf("%w: ask for the smallest memory or for the smallest faster than one device, not both", chainplan.ErrUnsupported)
	case req.MinMemory:
		if e.Pipeline.MinMemory == nil {
			return nil, nil, fmt.Errorf("%w: %s has no smallest-memory search: give the memory per device in bytes",
				chainplan.ErrUnsupported, e.Name)
		}
		m, err := e.Pipeline.MinMemory(pr, req)
		if err != nil {
			return nil, nil, err
		}
		pr = pr.WithMemory(m)
	case req.FasterMemory:
		m, note := fasterMemory(pr)
		if note != "" {
			notes = append(notes, note)
		}
		pr = pr.WithMemory(m)
	}
	p, more, err := e.Pipeline.Solve(pr, req)
	if err != nil {
		return nil, nil, err
	}
	p.SequentialTime = pr.TotalWork()
	p.UnconstrainedPeriod = contiguous.Unconstrained(pr)
	return p, append(notes, more...), nil
}

// fasterMemory returns the smallest memory per device at which the best contiguous plan is
// faster than one device, or, when none is, the smallest memory of the fastest contiguous
// plan with a note saying so.
func fasterMemory(pr *pipeline.Problem) (int64, string) {
	one := pr.TotalWork()
	if m, ok := contiguous.MinMemoryAt(pr, one*(1-1e-9)); ok {
		return m, ""
	}
	best := contiguous.Unconstrained(pr)
	m, _ := contiguous.MinMemoryAt(pr, best)
	return m, fmt.Sprintf("no plan on %d devices is faster than one device (the best period is %.4g, "+
		"one device takes %.4g): planning the fastest, %.2fx one device", pr.Options().GPUs, best, one, one/best)
}
