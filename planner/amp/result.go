package amp

import (
	"github.com/chainplan/chainplan/planner/cluster"
	"github.com/chainplan/chainplan/planner/launch"
)

// Format is the tag of a search3d document (docs/parallel.md, "search3d output").
const Format = "chainplan.search3d/v1"

// Result is what Search returns: the best candidates, ranked, and how the search went.
type Result struct {
	Format      string `json:"format"`
	Model       string `json:"model"`
	Cluster     string `json:"cluster"`
	Devices     int    `json:"devices"`
	GlobalBatch int64  `json:"global_batch"`
	Schedule    string `json:"schedule"`
	MemoryCheck string `json:"memory_check"`
	Cut         string `json:"cut"`
	// Blocks is the number of blocks the model was coarsened into (its layers when not).
	Blocks int `json:"blocks"`
	// BlockLayers[i] is the range of layers (1-based, inclusive) block i+1 holds.
	BlockLayers [][2]int `json:"block_layers"`
	// Enumerated counts the (pp, dp, tmp, mbs) combinations, Evaluated the priced
	// candidates (placements and cuts included).
	Enumerated int `json:"enumerated"`
	Evaluated  int `json:"evaluated"`
	// OverCapacity counts the candidates with a stage over its devices' memory before any
	// checkpointing; Checkpointed those rotor made fit; Dropped those removed.
	OverCapacity int `json:"over_capacity"`
	Checkpointed int `json:"checkpointed"`
	Dropped      int `json:"dropped"`
	// Candidates are the TopK best, ranked by predicted iteration time.
	Candidates []Candidate `json:"candidates"`
	// Megatron is the best candidate of Megatron's heuristic (spec §3.6) under the same
	// model and memory check, for comparison; nil when none fits.
	Megatron *Candidate `json:"megatron,omitempty"`
	Notes    []string   `json:"notes"`
	// MeasuredLinks are the cluster's links whose bandwidth a measurement stored with the
	// run replaced (the service's, docs/distributed.md); absent when the file's were used.
	MeasuredLinks []cluster.MeasuredLink `json:"measured_links,omitempty"`
	// Warnings name the candidates whose pipesim check disagrees with the prediction: a
	// pipeline time off by more than SimDivergence, a simulated peak over capacity, more
	// micro-batches in flight than the memory filter assumed (docs/parallel.md).
	Warnings []string `json:"warnings,omitempty"`
	SolveMS  float64  `json:"solve_ms"`
}

// Candidate is one strategy, AMP's 6-tuple (pp, dp, tmp, placement, mbs, assignment),
// priced.
type Candidate struct {
	// Rank is the position by predicted iteration time, from 1.
	Rank int `json:"rank"`
	PP   int `json:"pp"`
	DP   int `json:"dp"`
	TMP  int `json:"tmp"`
	MBS  int `json:"mbs"`
	// GAS is gbs/(dp·mbs), the micro-batches per pipeline per iteration.
	GAS int `json:"gas"`
	// Placement names the rank order: "megatron" (tmp fastest, then dp, then pp, nodes
	// filled in order) or "reversed" (the same over the devices in reverse order).
	Placement string `json:"placement"`
	// Cut says which partitioner chose the boundaries (amp, madpipe or uniform).
	Cut string `json:"cut"`
	// Boundaries are the stage boundaries over blocks, [0, ..., blocks] (stage i holds
	// blocks Boundaries[i]..Boundaries[i+1]−1), as in the paper's appendix tables.
	Boundaries []int   `json:"boundaries"`
	Stages     []Stage `json:"stages"`
	// IterationTimeS is Eq. 4: PipelineTimeS + DPSyncS (+ a calibration's OverheadS). PipelineTimeS is Eq. 5 for the
	// slowest replica; BottleneckS its largest stage time per micro-batch, P2PS its Σe.
	IterationTimeS float64 `json:"iteration_time_s"`
	PipelineTimeS  float64 `json:"pipeline_time_s"`
	DPSyncS        float64 `json:"dp_sync_s"`
	BottleneckS    float64 `json:"bottleneck_s"`
	P2PS           float64 `json:"p2p_s"`
	// ComputeS and CommS split PipelineTimeS + DPSyncS for calibration: the slowest
	// stage's tensor-parallel all-reduces (gas − 1 times), every stage's, the transfers
	// between stages and the synchronisation are communication, the rest computation.
	// OverheadS is the calibration's per-iteration overhead (0 uncalibrated), included in
	// IterationTimeS.
	ComputeS  float64 `json:"compute_s"`
	CommS     float64 `json:"comm_s"`
	OverheadS float64 `json:"overhead_s"`
	// Fits is false when a stage needs more memory than its devices have.
	Fits bool `json:"fits"`
	// Checkpointed counts the stages rotor checkpoints to fit.
	Checkpointed int `json:"checkpointed"`
	// Launch is what parallelize launches (planner/launch): mesh {pp, dp, tp: tmp},
	// microbatch mbs, microbatches gas, the stages' cuts over layers, each stage's rotor
	// budget or "none".
	Launch *launch.Shape `json:"launch,omitempty"`
	// Simulated is pipesim's run of the candidate's pipeline (SimCheck), for the returned
	// candidates and Megatron's pick with pp > 1; nil otherwise.
	Simulated *SimCheck `json:"simulated,omitempty"`

	overCapacity bool  // a stage needed more than its devices have before checkpointing
	needBytes    int64 // the most demanding stage's memory before checkpointing
}

// Stage is one pipeline stage of a candidate.
type Stage struct {
	// FirstBlock and LastBlock are 1-based and inclusive; FirstLayer and LastLayer the
	// model's layers (1-based, numbered as in the chain) they cover, FirstName and LastName
	// their names.
	FirstBlock int    `json:"first_block"`
	LastBlock  int    `json:"last_block"`
	FirstLayer int    `json:"first_layer"`
	LastLayer  int    `json:"last_layer"`
	FirstName  string `json:"first_name"`
	LastName   string `json:"last_name"`
	// Devices are the stage's devices, dp replicas of tmp devices each: Devices[d·tmp+t].
	Devices []int `json:"devices"`
	// DeviceType is the slowest device type among them.
	DeviceType string `json:"device_type"`
	// TimeS is the stage's forward and backward of one micro-batch, RecomputeS what
	// checkpointing adds to it (included in TimeS).
	TimeS      float64 `json:"time_s"`
	RecomputeS float64 `json:"recompute_s"`
	// InFlight is the micro-batches whose activations the stage holds at once.
	InFlight int `json:"in_flight"`
	// MemoryBytes is what one of the stage's devices needs (after checkpointing),
	// CapacityBytes the smallest memory among them.
	MemoryBytes   int64 `json:"memory_bytes"`
	CapacityBytes int64 `json:"capacity_bytes"`
	// Checkpoint is rotor's plan of a stage over capacity.
	Checkpoint *Checkpoint `json:"checkpoint,omitempty"`
}

// Checkpoint is the rotor plan that makes a stage fit.
type Checkpoint struct {
	BudgetBytes int64   `json:"budget_bytes"` // activation budget of one micro-batch
	PeakBytes   int64   `json:"peak_bytes"`
	MakespanS   float64 `json:"makespan_s"`
}
