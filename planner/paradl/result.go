package paradl

import (
	"github.com/chainplan/chainplan/planner/cluster"
	"github.com/chainplan/chainplan/planner/launch"
)

// Format is the tag of an advice document (docs/parallel.md, "advise output").
const Format = "chainplan.advice/v1"

// Strategy names a parallel strategy of spec §2.5, or one of the memory savers added to
// data parallelism.
type Strategy string

// The strategies, in the order advise lists them.
const (
	Serial      Strategy = "serial"   // p = 1 (§2.5.1)
	Data        Strategy = "data"     // §2.5.2
	Spatial     Strategy = "spatial"  // §2.5.3
	Layer       Strategy = "layer"    // model-vertical, no pipelining (§2.5.4)
	Pipeline    Strategy = "pipeline" // GPipe-style (§2.5.5)
	Filter      Strategy = "filter"   // §2.5.6
	Channel     Strategy = "channel"  // §2.5.7
	DataFilter  Strategy = "df"       // data across nodes, filter inside (§2.5.8)
	DataSpatial Strategy = "ds"       // data across nodes, spatial inside (§2.5.9)
	// DataCheckpoint is data parallelism whose per-device chain rotor checkpoints within
	// the memory left (§5.2 step d).
	DataCheckpoint Strategy = "data+checkpointing"
	// DataOffload is data parallelism whose per-device chain pofo offloads and
	// checkpoints.
	DataOffload Strategy = "data+offloading"
)

// Strategies lists every strategy a request may name, in output order.
var Strategies = []Strategy{Serial, Data, Spatial, Layer, Pipeline, Filter, Channel, DataFilter, DataSpatial,
	DataCheckpoint, DataOffload}

// Goal is what candidates are ranked by.
type Goal string

// The goals (spec §2.2: the authors' script ranks by performance, memory or cost).
const (
	GoalTime   Goal = "time"   // epoch time
	GoalCost   Goal = "cost"   // devices × epoch time (device-seconds)
	GoalMemory Goal = "memory" // memory per device
)

// Advice is the result of Advise: the ranked candidates and how they were computed.
type Advice struct {
	Format  string `json:"format"`
	Model   string `json:"model"`
	Cluster string `json:"cluster"`
	Goal    Goal   `json:"goal"`
	// DatasetSize is D, samples per epoch.
	DatasetSize int64 `json:"dataset_size"`
	// Scaling is "weak" (B = BatchPerDevice × p) or "strong" (B = GlobalBatch).
	Scaling        string `json:"scaling"`
	GlobalBatch    int64  `json:"global_batch,omitempty"`
	BatchPerDevice int64  `json:"batch_per_device,omitempty"`
	// Gamma is γ, the memory reuse factor applied to the naive memory sums, and
	// GammaSource how it was obtained.
	Gamma       float64 `json:"gamma"`
	GammaSource string  `json:"gamma_source"`
	// Optimizer names the optimizer whose state is counted, OptimizerStateBytes its state
	// for the whole model.
	Optimizer           string `json:"optimizer"`
	OptimizerStateBytes int64  `json:"optimizer_state_bytes"`
	// Notes are sentences about the whole request (a field the profile lacks, a value
	// assumed).
	Notes []string `json:"notes"`
	// MeasuredLinks are the cluster's links whose bandwidth a measurement stored with the
	// run replaced (the service's, docs/distributed.md); absent when the file's were used.
	MeasuredLinks []cluster.MeasuredLink `json:"measured_links,omitempty"`
	Candidates    []Candidate            `json:"candidates"`
	SolveMS       float64                `json:"solve_ms"`
}

// Candidate is one strategy at one device count: its time breakdown per epoch, its memory
// per device and whether it is feasible.
type Candidate struct {
	// Rank is the position among the feasible candidates by the goal, from 1; 0 for an
	// infeasible one.
	Rank     int      `json:"rank"`
	Strategy Strategy `json:"strategy"`
	// Devices is p.
	Devices int `json:"devices"`
	// DataDegree and SplitDegree are p1 and p2 of the hybrids (p = p1·p2).
	DataDegree  int `json:"data_degree,omitempty"`
	SplitDegree int `json:"split_degree,omitempty"`
	// Segments is S, the micro-batches of a pipeline.
	Segments int `json:"segments,omitempty"`
	// Groups are the layer ranges (1-based, inclusive) of the layer and pipeline
	// strategies, one per device.
	Groups [][2]int `json:"groups,omitempty"`
	// GlobalBatch is B; SamplesPerDevice what one device processes per iteration.
	GlobalBatch      int64   `json:"global_batch"`
	SamplesPerDevice float64 `json:"samples_per_device"`
	// Iterations is I = ⌈D/B⌉.
	Iterations int64 `json:"iterations"`
	Feasible   bool  `json:"feasible"`
	// Infeasible says why not (a limit of §2.6, or memory).
	Infeasible string `json:"infeasible,omitempty"`
	// EpochTimeS = ComputeS + CommS; IterationTimeS = EpochTimeS / Iterations.
	EpochTimeS     float64 `json:"epoch_time_s"`
	IterationTimeS float64 `json:"iteration_time_s"`
	// CostS is Devices × EpochTimeS, device-seconds per epoch.
	CostS    float64 `json:"cost_s"`
	ComputeS float64 `json:"compute_s"`
	CommS    float64 `json:"comm_s"`
	Compute  Compute `json:"compute"`
	Comm     Comm    `json:"comm"`
	// MemoryBytes is the memory one device needs, CapacityBytes the smallest memory of
	// the devices used.
	MemoryBytes   int64  `json:"memory_bytes"`
	CapacityBytes int64  `json:"capacity_bytes"`
	Memory        Memory `json:"memory"`
	// Saver is the checkpointing or offloading plan of data+checkpointing and
	// data+offloading.
	Saver    *Saver   `json:"saver,omitempty"`
	Warnings []string `json:"warnings"`
	// Launch is what parallelize launches (planner/launch); absent for a candidate it
	// cannot launch (spatial, offloading, a fractional micro-batch).
	Launch *launch.Shape `json:"launch,omitempty"`
}

// Compute is a candidate's computation per epoch, seconds.
type Compute struct {
	ForwardBackwardS float64 `json:"forward_backward_s"` // FB
	WeightUpdateS    float64 `json:"weight_update_s"`    // WU
	RecomputeS       float64 `json:"recompute_s"`        // a saver's extra time
}

// Comm is a candidate's communication per epoch, seconds (spec §2.2's breakdown).
type Comm struct {
	GradientS float64 `json:"gradient_s"` // GE all-reduce of weight gradients
	LayerS    float64 `json:"layer_s"`    // FB all-gather / all-reduce of filter and channel
	HaloS     float64 `json:"halo_s"`     // spatial halo exchange
	GatherS   float64 `json:"gather_s"`   // spatial → sequential all-gather
	P2PS      float64 `json:"p2p_s"`      // layer and pipeline boundaries
}

// Memory is a candidate's memory per device, bytes.
type Memory struct {
	// ActivationBytes is γ times the activation sum (or a saver's measured peak);
	// WeightBytes γ times weights, gradients and biases; OptimizerBytes the state held.
	ActivationBytes int64 `json:"activation_bytes"`
	WeightBytes     int64 `json:"weight_bytes"`
	OptimizerBytes  int64 `json:"optimizer_bytes"`
}

// Saver is the per-device memory saver of data+checkpointing and data+offloading.
type Saver struct {
	Algo        string `json:"algo"`         // rotor or pofo
	BudgetBytes int64  `json:"budget_bytes"` // activation budget of the per-device chain
	PeakBytes   int64  `json:"peak_bytes"`   // the plan's peak, replayed
	// MinBudgetBytes is the smallest budget the saver needs on this chain: always for
	// rotor; for pofo only when the budget falls short (0 otherwise: its search runs the
	// DP many times, and the plan at the budget does not need it).
	MinBudgetBytes int64 `json:"min_budget_bytes"`
	// MakespanS and BaseS are one iteration's time with the saver and without (no
	// recomputation), seconds.
	MakespanS float64 `json:"makespan_s"`
	BaseS     float64 `json:"base_s"`
}
