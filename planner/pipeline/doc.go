// Package pipeline is the model of pipelined model parallelism that every pipeline planner
// shares: the chain on P devices, the independent validator, and the 1F1B* schedule of a
// contiguous allocation with its exact best period. The chainplan.pipeline/v1 plan
// document, the request and the family's errors are defined in the contract package
// pipeplan, and every planner names them there (pipeplan.Plan, pipeplan.Request): one
// name for each type, in the front ends and the planners alike.
//
// Source: O. Beaumont, L. Eyraud-Dubois, A. Shilova, "MadPipe: Memory Aware Dynamic
// Programming Algorithm for Pipelined Model Parallelism" (2020), and A. Shilova's PhD thesis
// (2021), Part III; the implementable specification is shared/specs/madpipe.md, cited as
// "spec §x" below.
//
// # Model (spec §1)
//
// Layer ℓ = 1..L of a chainplan.Chain has u_F = fwd_time, u_B = bwd_time, W_ℓ = param_bytes,
// a_ℓ = out_bytes (a_0 = input_bytes) and the measured saved_bytes; the loss folds into
// layer L. P identical devices of M bytes each; each device pair has one half-duplex link
// of bandwidth β bytes per time unit, so a boundary ℓ between devices costs a_ℓ/β each way
// and C(ℓ) = 2a_ℓ/β in all. A device keeps WeightCopies·W of its layers (3: PipeDream-2BW;
// 2: a synchronous flush), a buffer of 2·a_ℓ for each boundary it borders (no buffer for
// a_0 or a_L), and the activations of the mini-batches in flight: ā per mini-batch and
// stage, the stage input plus the layers' saved_bytes (ActivationsSaved, the default) or
// the layers' inputs Σ a_{ℓ−1} (ActivationsInput, the paper's).
//
// Times are in the chain's unit (seconds for profiles chainplan takes), sizes in bytes.
// Patterns use the paper's shift convention (spec §1.4): mini-batch b runs an operation at
// start + (b + shift)·T, with start ∈ [0, T).
//
// # API for planners
//
//   - NewProblem(chain, Options) builds the model; its methods give the range sums in O(1):
//     UF, UB, U, Weights, Stored (ā), Transfer (a/β), Comm (C), Buffers, StageMemory
//     (𝓜(i,j,g) of spec §1.5 in this model), TotalWork (U(1,L)). WithMemory changes M.
//   - The document is pipeplan's (pipeplan.Plan, Stage, Op; pipeplan.Parse and ReadPlan
//     read it strictly). Problem.Header starts a planner's document; ProblemOf rebuilds
//     the problem of a plan.
//   - Validate(problem, plan) checks a plan independently of every planner (spec §3.4) and
//     reports the issues, the load bound, each stage's NCA and each device's memory in both
//     models; Check returns the same verdict as an error. Finalize fills a new plan's
//     Contiguous and MemoryPerGPU (the time-resolved peaks) and validates it: every planner
//     calls it on the plan it returns.
//   - OneFOneBStar(problem, stages, T) is the 1F1B*(T) pattern of a contiguous allocation,
//     communications as pseudo-stages (spec §1.7); BestPeriod(problem, stages) the exact
//     smallest period at which it fits the memory (spec §3.1, by candidate sums);
//     ScheduleContiguous both.
//   - pipeplan.InfeasibleError (errors.Is chainplan.ErrInfeasible) carries the smallest
//     memory that fits or a proven lower bound; MemoryLowerBound is one valid for every
//     allocation.
//
// The planners built on it are planner/contiguous (the optimal contiguous allocation),
// planner/pipedream (PipeDream's partitioning, then 1F1B*) and planner/madpipe.
package pipeline
