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
		Takes:   []Field{FieldSlots}, Schedule: rotorDP{}.funcs()},
	{Name: "rotor-ops", Family: Checkpointing, Format: formatSchedule,
		Summary: "rotor choosing one operation-level option per stage (chains with options)",
		Takes:   []Field{FieldSlots}, Schedule: rotorDP{stageOptions: true}.funcs()},
	{Name: "optimal", Family: Checkpointing, Format: formatSchedule,
		Summary: "exact optimum without the persistence restriction (short chains only)",
		Takes:   []Field{FieldSlots}, Schedule: &ScheduleFuncs{
			Solve: solveFloating, MinBudget: minBudgetFloating, SolveMin: solveFloatingMin, Simulate: replayFloating}},
	{Name: "revolve", Family: Checkpointing, Format: formatSchedule,
		Summary: "AD-style checkpointing: F_all only right before its backward",
		Takes:   []Field{FieldSlots}, Schedule: rotorDP{revolve: true}.funcs()},
	{Name: "sequential", Family: Checkpointing, Format: formatSchedule,
		Summary: "PyTorch checkpoint_sequential: K segments, or the best K that fits",
		Takes:   []Field{FieldSegments}, Schedule: &ScheduleFuncs{
			Solve: solveSequential, MinBudget: minBudgetSequential, SolveMin: solveSequentialMin, Simulate: replaySequence}},
	{Name: "store-all", Family: Checkpointing, Format: formatSchedule,
		Summary:  "PyTorch's default: no recomputation",
		Schedule: &ScheduleFuncs{Solve: solveStoreAll, MinBudget: minBudgetStoreAll, Simulate: replaySequence}},
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
		&PipelineFuncs{Solve: solveMadPipe, MinMemory: minMemoryMadPipe}),
	pipelineEntry(contiguous.Algo, "the optimal contiguous partition with its 1F1B* schedule",
		&PipelineFuncs{Solve: solveContiguous, MinMemory: minMemoryContiguous}),
	pipelineEntry(pipedream.Algo, "PipeDream's partitioning DP and memory estimate, scheduled by 1F1B*",
		&PipelineFuncs{Solve: solvePipeDream, MinMemory: minMemoryPipeDream}),
	adviseEntry,
	search3dEntry,
	simulationEntry(pipesim.GPipe),
	simulationEntry(pipesim.OneFOneBFlush),
	simulationEntry(pipesim.PipeDreamAsync),
	simulationEntry(pipesim.TwoBW),
	simulationEntry(pipesim.TiMePReSt),
	simulationEntry(pipesim.Periodic),
}

// The functions of the entries are named, so that a reader follows a name of the table to
// the planner that runs it (Solve -> the entry -> rotorDP.Solve -> rotor.Solve).

// rotorDP is the persistent DP of package rotor: rotor itself, its revolve variant, or
// rotor choosing one operation-level option per stage.
type rotorDP struct{ revolve, stageOptions bool }

func (d rotorDP) options(req Request) rotor.Options {
	return rotor.Options{Slots: req.Slots, Revolve: d.revolve, StageOptions: d.stageOptions}
}

// funcs are the entry's functions: the methods below, and the plain replay.
func (d rotorDP) funcs() *ScheduleFuncs {
	return &ScheduleFuncs{Solve: d.Solve, MinBudget: d.MinBudget, SolveMin: d.SolveMin, Simulate: replaySequence,
		Frontier: d.Frontier}
}

// Solve runs rotor.Solve at req's budget.
func (d rotorDP) Solve(c *chainplan.Chain, req Request) (*chainplan.Plan, error) {
	return rotor.Solve(c, req.BudgetBytes, d.options(req))
}

// MinBudget runs rotor.MinBudget.
func (d rotorDP) MinBudget(c *chainplan.Chain, req Request) (int64, error) {
	return rotor.MinBudget(c, d.options(req))
}

// SolveMin runs rotor.SolveMin.
func (d rotorDP) SolveMin(c *chainplan.Chain, req Request) (*chainplan.Plan, error) {
	return rotor.SolveMin(c, d.options(req))
}

// Frontier runs rotor.SolveFrontier.
func (d rotorDP) Frontier(c *chainplan.Chain, req Request) (*rotor.Frontier, error) {
	return rotor.SolveFrontier(c, d.options(req))
}

// The floating DP ("optimal") reads the chain as version 1 (docs/rotor.md): its plans are
// valid in the exact memory model, which only frees memory earlier.

func floatingOptions(req Request) rotor.Options { return rotor.Options{Slots: req.Slots} }

// solveFloating runs rotor.SolveFloating at req's budget.
func solveFloating(c *chainplan.Chain, req Request) (*chainplan.Plan, error) {
	return rotor.SolveFloating(c.Conservative(), req.BudgetBytes, floatingOptions(req))
}

// minBudgetFloating runs rotor.MinBudgetFloating.
func minBudgetFloating(c *chainplan.Chain, req Request) (int64, error) {
	return rotor.MinBudgetFloating(c.Conservative(), floatingOptions(req))
}

// solveFloatingMin runs rotor.SolveFloatingMin.
func solveFloatingMin(c *chainplan.Chain, req Request) (*chainplan.Plan, error) {
	return rotor.SolveFloatingMin(c.Conservative(), floatingOptions(req))
}

// replayFloating replays a floating DP's plan on the chain it planned.
func replayFloating(c *chainplan.Chain, p *chainplan.Plan, limitBytes int64) (Replay, error) {
	return replayHolding(c.Conservative(), c.ReplayStateBytes(p.Sequence), p, limitBytes)
}

// solveSequential runs baseline.Sequential with req's segments.
func solveSequential(c *chainplan.Chain, req Request) (*chainplan.Plan, error) {
	return baseline.Sequential(c, req.BudgetBytes, req.Segments)
}

// minBudgetSequential runs baseline.SequentialMinBudget.
func minBudgetSequential(c *chainplan.Chain, req Request) (int64, error) {
	return baseline.SequentialMinBudget(c, req.Segments)
}

// solveSequentialMin runs baseline.SequentialMin.
func solveSequentialMin(c *chainplan.Chain, req Request) (*chainplan.Plan, error) {
	return baseline.SequentialMin(c, req.Segments)
}

// solveStoreAll runs baseline.StoreAll.
func solveStoreAll(c *chainplan.Chain, req Request) (*chainplan.Plan, error) {
	return baseline.StoreAll(c, req.BudgetBytes)
}

// minBudgetStoreAll is the peak of the store-all schedule (the chain was validated).
func minBudgetStoreAll(c *chainplan.Chain, _ Request) (int64, error) {
	return rotor.StoreAllPeak(c), nil
}

// offloading is the entry of an offloading algorithm (package offload): it
// needs the bandwidth, takes the listed fields, and has no search that Solve could reuse.
// Its executor (OffloadedChain) recomputes whole stages and holds each stage's output to
// the stage's backward, so it plans on the chain read as version 1 (Chain.Conservative):
// the exact memory model and the options are the checkpointing executor's.
func offloading(name, summary string,
	solve offload.Solver, minBudget func(*chainplan.Chain, offload.Options) (int64, error), takes ...Field) Entry {
	o := offloader{solve: solve, minBudget: minBudget}
	return Entry{Name: name, Family: Offloading, Format: formatOffload, Summary: summary,
		Needs: []Field{FieldBandwidth}, Takes: takes, Schedule: &ScheduleFuncs{
			Solve: o.Solve, MinBudget: o.MinBudget, Simulate: replayConservativeOffload}}
}

// offloader is an offloading algorithm of package offload: its solver and its
// smallest-budget search, as the table names them.
type offloader struct {
	solve     offload.Solver
	minBudget func(*chainplan.Chain, offload.Options) (int64, error)
}

func offloadOptions(req Request) offload.Options {
	return offload.Options{BandwidthBytesPerS: req.Bandwidth, Slots: req.Slots}
}

// Solve runs the algorithm's solver at req's budget on the chain read as version 1.
func (o offloader) Solve(c *chainplan.Chain, req Request) (*chainplan.Plan, error) {
	return o.solve(c.Conservative(), req.BudgetBytes, offloadOptions(req))
}

// MinBudget runs the algorithm's smallest-budget search on the chain read as version 1.
func (o offloader) MinBudget(c *chainplan.Chain, req Request) (int64, error) {
	return o.minBudget(c.Conservative(), offloadOptions(req))
}

// replayConservativeOffload replays an offloading plan on the chain it planned.
func replayConservativeOffload(c *chainplan.Chain, p *chainplan.Plan, limitBytes int64) (Replay, error) {
	return replayOffload(c.Conservative(), p, limitBytes)
}
