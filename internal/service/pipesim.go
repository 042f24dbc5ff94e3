package service

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner"
	"github.com/chainplan/chainplan/planner/contiguous"
	"github.com/chainplan/chainplan/planner/pipeline"
	"github.com/chainplan/chainplan/planner/pipesim"
	"github.com/chainplan/chainplan/store"
)

// DefaultSimulationWeightCopies is the weight copies of a device in a simulation that
// replays no plan: the weights and their gradients of a synchronous step. Each weight
// version a schedule holds beyond the first adds one more copy (planner/pipesim); add the
// optimizer's copies to it (3 for SGD with momentum, 4 for Adam).
const DefaultSimulationWeightCopies = 2

// PipesimRequest is what to simulate (chainplan pipesim, chainplan.pipesim): a schedule on
// a partition of the chain into stages, or on a plan.
type PipesimRequest struct {
	// Schedule is one of the registry's Simulation entries (planner.Schedules).
	Schedule string `json:"schedule"`
	// Stages is a stage specification (pipesim.ParseStages): a count, partitioned by
	// contiguous.Balanced, or layer ranges. Empty with a plan.
	Stages string `json:"stages,omitempty"`
	// Plan is a chainplan.pipeline/v1 plan of the chain: periodic replays it, the other
	// schedules run its partition (one stage per device). Its model (devices, bandwidth,
	// weight copies, activation model, memory) is the simulation's.
	Plan *pipeplan.Plan `json:"-"`
	// PlanID is a stored pipeline plan, used as Plan, on its run's chain (SimulateRun).
	PlanID int64 `json:"plan_id,omitempty"`
	// Microbatches is N per mini-batch, Minibatches K (0: pipesim.DefaultMinibatches).
	Microbatches int `json:"microbatches"`
	Minibatches  int `json:"minibatches"`
	// UnitTime makes every task last 1 and transfers 0 (the papers' figures).
	UnitTime bool `json:"unit_time,omitempty"`
	// Bandwidth puts transfers on links of that many bytes per second (0: transfers are
	// free); AlphaS adds a latency to each.
	Bandwidth float64 `json:"bandwidth,omitempty"`
	AlphaS    float64 `json:"alpha_s,omitempty"`
	// WeightCopies (0: DefaultSimulationWeightCopies), ActivationModel ("": saved) and
	// MemoryBytes (the memory per device to check, 0: none) are planner/pipeline's.
	WeightCopies    int    `json:"weight_copies,omitempty"`
	ActivationModel string `json:"activation_model,omitempty"`
	MemoryBytes     int64  `json:"memory_bytes,omitempty"`
	// Checkpoint lists the stages (0-based) that recompute their forward before their
	// backward; CheckpointAll makes every stage do so.
	Checkpoint    []int `json:"checkpoint,omitempty"`
	CheckpointAll bool  `json:"checkpoint_all,omitempty"`
	// MaxInflight caps TiMePReSt's mini-batches in flight; Flush runs periodic as steps of
	// the pipeline runner.
	MaxInflight int  `json:"max_inflight,omitempty"`
	Flush       bool `json:"flush,omitempty"`
	// Record keeps the timeline, for a trace or a picture.
	Record bool `json:"-"`
	// Source says who asks (SourceCLI, SourcePython), stored with the simulation.
	Source string `json:"source,omitempty"`
}

// CheckSchedule returns an error wrapping ErrBadInput when name is no simulated schedule.
func CheckSchedule(name string) error {
	if slices.Contains(planner.Schedules(), name) {
		return nil
	}
	return &inputError{fmt.Sprintf("unknown schedule %q (want %s)", name, strings.Join(planner.Schedules(), ", "))}
}

// Simulate runs req's schedule on chain c (or on req.Plan, a plan of c). Errors: an unknown
// schedule and contradictory options wrapping ErrBadInput; a *pipesim.OptionError (a bad
// count, stage specification, checkpoint list, cap), a *pipeplan.OptionError, the chain's
// *chainplan.ChainError, a plan that does not fit c (ErrInvalidPlan): all bad input.
func Simulate(c *chainplan.Chain, req PipesimRequest) (*pipesim.Result, error) {
	if err := CheckSchedule(req.Schedule); err != nil {
		return nil, err
	}
	su, err := pipesimSetup(c, req)
	if err != nil {
		return nil, err
	}
	return planner.SimulatePipeline(req.Schedule, su, pipesim.Options{Microbatches: req.Microbatches,
		Minibatches: req.Minibatches, UnitTime: req.UnitTime, MaxInflight: req.MaxInflight, Flush: req.Flush, Record: req.Record})
}

// noLinks is the bandwidth of a problem whose transfers are free: the model needs one, the
// simulation then has no links.
const noLinks = math.MaxFloat64

// pipesimSetup builds the setup req describes on c.
func pipesimSetup(c *chainplan.Chain, req PipesimRequest) (*pipesim.Setup, error) {
	if c == nil {
		return nil, &chainplan.ChainError{Field: "stages", Msg: "no chain"}
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	periodic := req.Schedule == string(pipesim.Periodic)
	if req.Plan != nil {
		switch {
		case req.Stages != "":
			return nil, &inputError{"give the stages or a plan, not both"}
		case req.Bandwidth != 0 || req.WeightCopies != 0 || req.ActivationModel != "" || req.MemoryBytes != 0:
			return nil, &inputError{"a plan brings its own bandwidth, weight copies, activation model and memory: leave them out"}
		case periodic && (req.AlphaS != 0 || len(req.Checkpoint) > 0 || req.CheckpointAll):
			return nil, &inputError{"periodic replays the plan's model, which has no latency and no recomputation"}
		}
		pr, err := pipeline.ProblemOf(c, req.Plan)
		if err != nil {
			return nil, fmt.Errorf("%w: the plan does not fit the chain: %w", chainplan.ErrInvalidPlan, err)
		}
		if periodic {
			return pipesim.PlanSetup(pr, req.Plan)
		}
		return pipesim.NewSetup(pr, req.Plan.Stages, pipesim.SetupOptions{Links: true, AlphaS: req.AlphaS,
			Checkpointed: checkpointed(req, len(req.Plan.Stages))})
	}
	switch {
	case periodic:
		return nil, &inputError{"periodic replays a chainplan.pipeline/v1 plan: give one (a plan file, a stored plan id)"}
	case req.Stages == "":
		return nil, &inputError{"the stages are required: a count (4) or layer ranges (1-4,5-9,10-12), or a plan"}
	case math.IsNaN(req.Bandwidth) || math.IsInf(req.Bandwidth, 0) || req.Bandwidth < 0:
		return nil, &inputError{fmt.Sprintf("bandwidth must be a positive, finite number of bytes per second, or 0 for free transfers (got %v)", req.Bandwidth)}
	}
	stages, count, err := pipesim.ParseStages(req.Stages, len(c.Stages))
	if err != nil {
		return nil, err
	}
	opts := pipeplan.Options{GPUs: max(count, len(stages)), MemoryBytes: req.MemoryBytes, Bandwidth: req.Bandwidth,
		WeightCopies: req.WeightCopies, ActivationModel: pipeplan.ActivationModel(req.ActivationModel)}
	if opts.WeightCopies == 0 {
		opts.WeightCopies = DefaultSimulationWeightCopies
	}
	if req.Bandwidth == 0 {
		opts.Bandwidth = noLinks
	}
	pr, err := pipeline.NewProblem(c, opts)
	if err != nil {
		return nil, err
	}
	if count > 0 {
		if err := pr.CheckPlanning(); err != nil {
			return nil, err
		}
		stages = contiguous.Balanced(pr, count)
	}
	return pipesim.NewSetup(pr, stages, pipesim.SetupOptions{Links: req.Bandwidth > 0, AlphaS: req.AlphaS,
		Checkpointed: checkpointed(req, len(stages))})
}

// checkpointed returns the stages req checkpoints out of n.
func checkpointed(req PipesimRequest, n int) []int {
	if !req.CheckpointAll {
		return req.Checkpoint
	}
	all := make([]int, n)
	for k := range all {
		all[k] = k
	}
	return all
}

// SimulatedRun is a simulation of a stored run, as SimulateRun recorded it.
type SimulatedRun struct {
	RunID        int64
	SimulationID int64
	Chain        *chainplan.Chain
	Result       *pipesim.Result
	// Comparisons set the simulation of each stored execution of the simulated plan (or
	// of a stored plan with the simulated partition) beside what it measured, rank by rank.
	Comparisons []RankComparison
}

// SimulateRun simulates the chain of the run ref names, or with req.PlanID the stored
// pipeline plan on its run's chain (ref may then be the zero RunRef), records the
// simulation (the simulations tables, docs/sql.md) and compares it with the executions the
// pipeline runner stored for that plan or partition. Errors as Simulate's, plus
// chainplan.ErrNotFound for a missing run or plan and ErrBadInput for a plan of another
// family or of another run.
func (s *Service) SimulateRun(ctx context.Context, ref RunRef, req PipesimRequest) (*SimulatedRun, error) {
	if err := checkSource(req.Source); err != nil {
		return nil, err
	}
	if err := CheckSchedule(req.Schedule); err != nil {
		return nil, err
	}
	out := &SimulatedRun{}
	if req.PlanID > 0 {
		if req.Plan != nil {
			return nil, &inputError{"give a plan or a stored plan id, not both"}
		}
		p, c, ok, err := s.StoredPipelinePlan(ctx, req.PlanID)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, &inputError{fmt.Sprintf("plan %d is not a pipeline plan (chainplan pipeline --run records those)", req.PlanID)}
		}
		sp, err := s.db.Plan(ctx, req.PlanID)
		if err != nil {
			return nil, err
		}
		if ref != (RunRef{}) {
			id, err := s.ResolveRun(ctx, ref)
			if err != nil {
				return nil, err
			}
			if id != sp.RunID {
				return nil, &inputError{fmt.Sprintf("plan %d was made from run %d, not run %d", req.PlanID, sp.RunID, id)}
			}
		}
		req.Plan, out.RunID, out.Chain = p, sp.RunID, c
	} else {
		id, c, err := s.runChain(ctx, ref)
		if err != nil {
			return nil, err
		}
		out.RunID, out.Chain = id, c
	}
	res, err := Simulate(out.Chain, req)
	if err != nil {
		return nil, err
	}
	out.Result = res
	if out.SimulationID, err = s.recordSimulation(ctx, out.RunID, req, res); err != nil {
		return nil, err
	}
	if out.Comparisons, err = s.compareExecutions(ctx, out.RunID, out.Chain, req, res); err != nil {
		return nil, err
	}
	return out, nil
}

// recordSimulation stores res, simulated from run runID as req asked.
func (s *Service) recordSimulation(ctx context.Context, runID int64, req PipesimRequest, res *pipesim.Result) (int64, error) {
	doc, err := json.Marshal(res)
	if err != nil {
		return 0, err
	}
	row := &store.Simulation{RunID: runID, PlanID: req.PlanID, Schedule: string(res.Schedule), Microbatches: res.Microbatches,
		Minibatches: res.Minibatches, UnitTime: res.UnitTime, Params: req, MakespanS: res.Makespan, PeriodS: res.Period,
		MicrobatchPeriodS: res.MicrobatchPeriod, VersionDifference: res.VersionDifference, MaxStaleness: res.MaxStaleness,
		Result: doc, Version: s.version}
	for _, x := range res.PerStage {
		dev := res.PerDevice[x.Device]
		row.SteadyBubble += x.SteadyBubble / float64(len(res.PerStage))
		row.PeakBytes = max(row.PeakBytes, dev.PeakBytes)
		row.Stages = append(row.Stages, store.SimulationStage{Index: x.Stage, First: x.First, Last: x.Last, Device: x.Device,
			Checkpointed: x.Checkpointed, BusyS: x.Busy, Bubble: x.Bubble, SteadyBubble: x.SteadyBubble,
			PeakInflight: x.PeakInflight, PeakActivationBytes: x.PeakActivationBytes, WeightVersions: x.WeightVersions,
			DevicePeakBytes: dev.PeakBytes})
	}
	return s.db.RecordSimulation(ctx, row)
}
