package planner

import (
	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/baseline"
	"github.com/chainplan/chainplan/planner/contiguous"
	"github.com/chainplan/chainplan/planner/madpipe"
	"github.com/chainplan/chainplan/planner/multichain"
	"github.com/chainplan/chainplan/planner/offload"
	"github.com/chainplan/chainplan/planner/pipedream"
	"github.com/chainplan/chainplan/planner/pipesim"
	"github.com/chainplan/chainplan/planner/rotor"
)

// Plan formats of the entries.
const (
	formatSchedule   = chainplan.ScheduleFormat
	formatOffload    = chainplan.ScheduleFormatOffload
	formatMultichain = chainplan.ScheduleFormatMultichain
)

// entries is the registry: every algorithm Solve runs, in the order help texts list them.
// docs/ARCHITECTURE.md ("How to add a planner") says what a new entry needs.
var entries = []Entry{
	{Name: "rotor", Family: Checkpointing, Format: formatSchedule,
		Summary: "optimal memory-persistent checkpointing (the rotor DP; default)",
		Takes:   []Field{FieldSlots}, Schedule: rotorFuncs(false)},
	{Name: "rotor-ops", Family: Checkpointing, Format: formatSchedule,
		Summary: "rotor choosing one operation-level option per stage (chains with options)",
		Takes:   []Field{FieldSlots}, Schedule: rotorOpsFuncs()},
	{Name: "optimal", Family: Checkpointing, Format: formatSchedule,
		Summary: "exact optimum without the persistence restriction (short chains only)",
		// The floating DP reads the chain as version 1 (docs/rotor.md): its plans are
		// valid in the exact memory model, which only frees memory earlier.
		Takes: []Field{FieldSlots}, Schedule: &ScheduleFuncs{
			Solve: func(c *chainplan.Chain, req Request) (*chainplan.Plan, error) {
				return rotor.SolveFloating(c.Conservative(), req.BudgetBytes, rotorOptions(req, false))
			},
			MinBudget: func(c *chainplan.Chain, req Request) (int64, error) {
				return rotor.MinBudgetFloating(c.Conservative(), rotorOptions(req, false))
			},
			SolveMin: func(c *chainplan.Chain, req Request) (*chainplan.Plan, error) {
				return rotor.SolveFloatingMin(c.Conservative(), rotorOptions(req, false))
			},
			Simulate: func(c *chainplan.Chain, p *chainplan.Plan, limitBytes int64) (Replay, error) {
				return replaySequence(c.Conservative(), p, limitBytes)
			},
		}},
	{Name: "revolve", Family: Checkpointing, Format: formatSchedule,
		Summary: "AD-style checkpointing: F_all only right before its backward",
		Takes:   []Field{FieldSlots}, Schedule: rotorFuncs(true)},
	{Name: "sequential", Family: Checkpointing, Format: formatSchedule,
		Summary: "PyTorch checkpoint_sequential: K segments, or the best K that fits",
		Takes:   []Field{FieldSegments}, Schedule: &ScheduleFuncs{
			Solve: func(c *chainplan.Chain, req Request) (*chainplan.Plan, error) {
				return baseline.Sequential(c, req.BudgetBytes, req.Segments)
			},
			MinBudget: func(c *chainplan.Chain, req Request) (int64, error) {
				return baseline.SequentialMinBudget(c, req.Segments)
			},
			SolveMin: func(c *chainplan.Chain, req Request) (*chainplan.Plan, error) {
				return baseline.SequentialMin(c, req.Segments)
			},
			Simulate: replaySequence,
		}},
	{Name: "store-all", Family: Checkpointing, Format: formatSchedule,
		Summary: "PyTorch's default: no recomputation",
		Schedule: &ScheduleFuncs{
			Solve: func(c *chainplan.Chain, req Request) (*chainplan.Plan, error) {
				return baseline.StoreAll(c, req.BudgetBytes)
			},
			MinBudget: func(c *chainplan.Chain, _ Request) (int64, error) {
				return rotor.StoreAllPeak(c), nil // the chain was validated
			},
			Simulate: replaySequence,
		}},
	offloading("pofo", "optimal offloading + rematerialization (POFO; default grid by chain length, 50-243 slots)",
		offload.SolvePOFO, offload.MinBudgetPOFO, FieldSlots),
	offloading("offload", "optimal offloading only (DYNPROG, 500 slots by default)",
		offload.SolveDynProg, offload.MinBudgetDynProg, FieldSlots),
	offloading("greedy", "offload the shortest prefix of activations that fits (GREEDY)",
		offload.SolveGreedy, offload.MinBudgetGreedy),
	offloading("autocapper", "rotor schedules capped by offloading (AUTOCAPPER heuristic)",
		offload.SolveAutoCapper, offload.MinBudgetAutoCapper, FieldSlots),
	offloading("opportunist", "offload while the link is free (OPPORTUNIST heuristic)",
		offload.SolveOpportunist, offload.MinBudgetOpportunist, FieldSlots),
	multichainEntry("multichain", "the fastest of the multi-chain DP, rotor on the towers concatenated, "+
		"and no recomputation", multichain.Best),
	multichainEntry("multichain-linear", "rotor on the towers concatenated, in every order", multichain.Linear),
	pipelineEntry(madpipe.Algo, "memory-aware pipeline partitioning and periodic schedule (MadPipe: DP, then a MILP)",
		madpipeFuncs),
	pipelineEntry(contiguous.Algo, "the optimal contiguous partition with its 1F1B* schedule", contiguousFuncs),
	pipelineEntry(pipedream.Algo, "PipeDream's partitioning DP and memory estimate, scheduled by 1F1B*", pipedreamFuncs),
	adviseEntry,
	search3dEntry,
	simulationEntry(pipesim.GPipe),
	simulationEntry(pipesim.OneFOneBFlush),
	simulationEntry(pipesim.PipeDreamAsync),
	simulationEntry(pipesim.TwoBW),
	simulationEntry(pipesim.TiMePReSt),
	simulationEntry(pipesim.Periodic),
}

func rotorOptions(req Request, revolve bool) rotor.Options {
	return rotor.Options{Slots: req.Slots, Revolve: revolve}
}

// rotorOpsFuncs are the functions of the persistent DP with operation-level options.
func rotorOpsFuncs() *ScheduleFuncs {
	opts := func(req Request) rotor.Options { return rotor.Options{Slots: req.Slots, StageOptions: true} }
	return &ScheduleFuncs{
		Solve: func(c *chainplan.Chain, req Request) (*chainplan.Plan, error) {
			return rotor.Solve(c, req.BudgetBytes, opts(req))
		},
		MinBudget: func(c *chainplan.Chain, req Request) (int64, error) {
			return rotor.MinBudget(c, opts(req))
		},
		SolveMin: func(c *chainplan.Chain, req Request) (*chainplan.Plan, error) {
			return rotor.SolveMin(c, opts(req))
		},
		Simulate: replaySequence,
		Frontier: func(c *chainplan.Chain, req Request) (*rotor.Frontier, error) {
			return rotor.SolveFrontier(c, opts(req))
		},
	}
}

// rotorFuncs are the functions of the persistent DP, rotor or its revolve variant.
func rotorFuncs(revolve bool) *ScheduleFuncs {
	return &ScheduleFuncs{
		Solve: func(c *chainplan.Chain, req Request) (*chainplan.Plan, error) {
			return rotor.Solve(c, req.BudgetBytes, rotorOptions(req, revolve))
		},
		MinBudget: func(c *chainplan.Chain, req Request) (int64, error) {
			return rotor.MinBudget(c, rotorOptions(req, revolve))
		},
		SolveMin: func(c *chainplan.Chain, req Request) (*chainplan.Plan, error) {
			return rotor.SolveMin(c, rotorOptions(req, revolve))
		},
		Simulate: replaySequence,
		Frontier: func(c *chainplan.Chain, req Request) (*rotor.Frontier, error) {
			return rotor.SolveFrontier(c, rotorOptions(req, revolve))
		},
	}
}

// offloading is the entry of an offloading algorithm (package offload): it
// needs the bandwidth, takes the listed fields, and has no search that Solve could reuse.
// Its executor (OffloadedChain) recomputes whole stages and holds each stage's output to
// the stage's backward, so it plans on the chain read as version 1 (Chain.Conservative):
// the exact memory model and the options are the checkpointing executor's.
func offloading(name, summary string,
	solve offload.Solver, minBudget func(*chainplan.Chain, offload.Options) (int64, error), takes ...Field) Entry {
	opts := func(req Request) offload.Options {
		return offload.Options{BandwidthBytesPerS: req.Bandwidth, Slots: req.Slots}
	}
	return Entry{Name: name, Family: Offloading, Format: formatOffload, Summary: summary,
		Needs: []Field{FieldBandwidth}, Takes: takes, Schedule: &ScheduleFuncs{
			Solve: func(c *chainplan.Chain, req Request) (*chainplan.Plan, error) {
				return solve(c.Conservative(), req.BudgetBytes, opts(req))
			},
			MinBudget: func(c *chainplan.Chain, req Request) (int64, error) {
				return minBudget(c.Conservative(), opts(req))
			},
			Simulate: func(c *chainplan.Chain, p *chainplan.Plan, limitBytes int64) (Replay, error) {
				return replayOffload(c.Conservative(), p, limitBytes)
			},
		}}
}
