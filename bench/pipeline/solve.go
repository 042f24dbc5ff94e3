package main

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/contiguous"
	"github.com/chainplan/chainplan/planner/madpipe"
	"github.com/chainplan/chainplan/planner/pipedream"
	"github.com/chainplan/chainplan/planner/pipeline"
)

// problem is the model of a series at one memory: the paper's (each layer's input as
// stored activation, its 3 weight copies, no transient memory).
func problem(s *series, memory int64) (*pipeline.Problem, error) {
	return pipeline.NewProblem(s.chain, pipeplan.Options{GPUs: s.gpus, MemoryBytes: memory, Bandwidth: s.beta,
		WeightCopies: 3, ActivationModel: pipeplan.ActivationsInput, NoTemporaries: true})
}

// minMemory returns the smallest memory per device at which algo finds a plan (madpipe:
// the smallest its search found, to 0.1 %).
func minMemory(s *series, algo string, limit time.Duration) (int64, error) {
	pr, err := problem(s, 0)
	if err != nil {
		return 0, err
	}
	switch algo {
	case "contiguous":
		return contiguous.MinMemory(pr)
	case "pipedream":
		return pipedream.MinMemory(pr, pipedream.Options{})
	case "madpipe":
		return madpipe.MinMemory(pr, madpipe.Options{TimeLimit: limit})
	}
	return 0, fmt.Errorf("unknown algorithm %q", algo)
}

// plan runs algo at memory and checks its plan with the independent validator.
func plan(s *series, algo string, memory int64, limit time.Duration) outcome {
	pr, err := problem(s, memory)
	if err != nil {
		return outcome{err: err.Error()}
	}
	start := time.Now()
	var p *pipeplan.Plan
	switch algo {
	case "contiguous":
		p, err = contiguous.Solve(pr)
	case "pipedream":
		p, err = pipedream.Solve(pr, pipedream.Options{})
	case "madpipe":
		p, err = madpipe.Solve(pr, madpipe.Options{TimeLimit: limit})
	default:
		err = fmt.Errorf("unknown algorithm %q", algo)
	}
	el := time.Since(start)
	if err != nil {
		var ie *pipeplan.InfeasibleError
		if errors.As(err, &ie) {
			return outcome{err: "infeasible", solve: el}
		}
		return outcome{err: err.Error(), solve: el}
	}
	if err := pipeline.Check(pr, p); err != nil {
		return outcome{err: "invalid plan: " + err.Error(), solve: el}
	}
	r := outcome{ok: true, period: p.Period, predicted: p.PredictedPeriod, solve: el}
	if len(p.MemoryPerGPU) > 0 {
		r.peak = float64(slices.Max(p.MemoryPerGPU))
	}
	if algo == "madpipe" {
		r.note = p.Chosen
	}
	return r
}
