// Package pipesim simulates pipeline schedules event by event: GPipe, 1F1B with a flush
// (PipeDream-Flush), PipeDream's asynchronous 1F1B with weight stashing, PipeDream-2BW,
// TiMePReSt's nF1B, and the replay of a chainplan.pipeline/v1 plan (MadPipe's, the
// contiguous planner's, PipeDream's). It is the ground truth the papers' closed forms are
// compared with, a second check of the pipeline planners' plans, and what a 3-D search
// can ask about a candidate partition.
//
// Source: shared/specs/paradl_amp_timeprest.md, cited as "spec §x": §5.4 (the simulator and
// its identities SIM-1..SIM-5), §4 (TiMePReSt: §4.5 the executable rules, §4.9 the tests
// T-1..T-9), §6.2 (the pipeline formulas of AMP and ParaDL), §6.4 (staleness).
//
// # Model
//
// A chain cut into S stages, stage s on its own device (a replayed plan may put several
// stages on one device). Every device runs one task at a time; with links (SetupOptions),
// each boundary has one link per direction that carries one transfer at a time while the
// devices compute, and a replayed plan has the plan's model, one link per device pair for
// both directions. K mini-batches of N micro-batches each are simulated; the chain's
// measurements are those of one micro-batch.
//
//   - Durations come from planner/pipeline, the validator's definition (Problem.Cost): F
//     = Σ u_F and B = Σ u_B of the stage's layers, a transfer α + a/β (Transfer); a
//     checkpointed stage's backward lasts its forward longer (the recomputation).
//     TiMePReSt's backward covers a whole mini-batch: N times the stage's backward, its
//     gradient N times the bytes (linear in the batch, spec §4.10 trap 1). In unit time
//     every task lasts 1 and transfers 0.
//   - Memory is planner/pipeline's too: a device holds DeviceStatic (weight copies and
//     boundary buffers), the activations of the micro-batches in flight, Cost's Stored each
//     from the start of a forward to the end of its backward (a checkpointed stage its
//     input, plus ā while recomputing), and while an operation runs its transient bytes
//     (Cost's FwdExtra, BwdExtra). Each weight version a stage holds beyond the first
//     costs one more copy of its weights, except in a replayed plan, whose weight_copies
//     count them. At one instant every end comes before every start (releases first), and
//     peaks are taken once the instant is settled.
//   - Weight versions: version v is the weights after v mini-batches' updates; stage s
//     applies mini-batch k's update when k's last backward at s ends, and the update is
//     complete when it ends at the first stage. A micro-batch's forward uses the newest
//     complete update when it starts at the first stage (vertical sync), kept until its
//     backward (stashing: every schedule but TiMePReSt, whose backward uses the newest
//     weights, spec §4.5); 2BW uses k−2 for mini-batch k (delay 1). Mini-batch k's version
//     difference is v = k − (the version its backward uses); staleness v − 1.
//
// # Schedules
//
// GPipe, OneFOneBFlush, PipeDreamAsync and TwoBW give every device a fixed order (1F1B:
// min(S−s, n) forwards, then a backward and a forward in turn, then the backwards; n = N
// with a flush, K·N without); Periodic the plan's order, micro-batch b entering at b·T (or,
// with Options.Flush, as steps of chainplan's runner); TiMePReSt's devices choose, among
// the ready tasks, a backward first, then the oldest forward.
//
// # API
//
//   - NewSetup(problem, stages, SetupOptions), PlanSetup(problem, plan): what to simulate;
//     ParseStages reads a stage specification ("4", "1-4,5-9").
//   - Simulate(setup, Options) runs it and returns a Result: makespan, steady-state period,
//     each stage's bubble, in-flight micro-batches, activation bytes and weight versions,
//     each device's memory, each mini-batch's versions and staleness; with Options.Record
//     the timeline, for ChromeTrace and internal/plot's pipeline picture.
//   - GPipeMakespan, AMPMakespan, ParaDLMakespan, PaperVersionDifference: the closed forms
//     the simulation is compared with.
//
// The schedules are the Simulation entries of the planner registry (planner.SimulatePipeline).
// Simulating 1,000 mini-batches of 8 micro-batches on 8 stages (about 230,000 tasks) costs
// 20 to 50 ms of CPU (BenchmarkSimulate).
package pipesim
