package pipeline

import (
	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/pipeplan"
)

// Header returns a plan for p with its options filled in (devices, memory, bandwidth,
// weight copies, activation model, temporaries, headroom, checkpoint) and no stages: how
// every planner starts the document it returns.
func (p *Problem) Header(algo string, period float64) *pipeplan.Plan {
	return &pipeplan.Plan{Format: pipeplan.Format, Algo: algo, GPUs: p.opts.GPUs, MemoryBytes: p.opts.MemoryBytes,
		Bandwidth: p.opts.Bandwidth, WeightCopies: p.opts.WeightCopies,
		ActivationModel: p.opts.ActivationModel, Period: period, Temporaries: !p.opts.NoTemporaries,
		Headroom: p.opts.Headroom, Checkpoint: p.opts.Checkpoint}
}

// ProblemOf builds the problem a plan was made for: c on the plan's devices, memory,
// bandwidth, weight copies and activation model. Errors are NewProblem's; a plan field
// that is out of range is reported under the option's name.
func ProblemOf(c *chainplan.Chain, p *pipeplan.Plan) (*Problem, error) {
	return NewProblem(c, pipeplan.Options{GPUs: p.GPUs, MemoryBytes: p.MemoryBytes, Bandwidth: p.Bandwidth,
		WeightCopies: p.WeightCopies, ActivationModel: p.ActivationModel, Headroom: p.Headroom,
		NoTemporaries: !p.Temporaries, Checkpoint: p.Checkpoint})
}
