package amp

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/calibration"
)

// Schedules for Options.Schedule: they set the micro-batches a stage holds in flight.
const (
	Schedule1F1B  = "1f1b"  // PipeDream-Flush: stage i (1-based) holds min(pp − i + 1, gas)
	ScheduleGPipe = "gpipe" // all gas micro-batches' forwards, then the backwards
)

// Memory checks for Options.MemoryCheck.
const (
	// MemoryRotor checkpoints a stage over capacity with rotor within the memory left and
	// charges the recomputation; a stage rotor cannot fit drops the candidate. The default.
	MemoryRotor = "rotor"
	// MemoryDrop drops every candidate with a stage over capacity.
	MemoryDrop = "drop"
	// MemoryOff keeps every candidate, as AMP does; Candidate.Fits still says which fit.
	MemoryOff = "off"
)

// Cuts for Options.Cut.
const (
	CutAMP     = "amp"     // AMP's exact DP (partition.go), the default
	CutMadPipe = "madpipe" // MadPipe's memory-aware contiguous partitioner
	CutBest    = "best"    // both, the better priced kept
)

// Options is a search3d request. The zero value of every field but GlobalBatch has a
// documented default.
type Options struct {
	// GlobalBatch is gbs, the samples of one iteration (required, ≥ 1).
	GlobalBatch int64 `json:"global_batch,omitempty"`
	// TMPMax bounds the tensor degree (0: the smallest node's device count, Megatron's
	// bound; spec §3.6).
	TMPMax int `json:"tmp_max,omitempty"`
	// Schedule is the pipeline schedule the memory filter assumes ("" means 1f1b).
	Schedule string `json:"schedule,omitempty"`
	// MemoryCheck is the memory filter ("" means rotor).
	MemoryCheck string `json:"memory_check,omitempty"`
	// Cut picks the layer assignment ("" means amp).
	Cut string `json:"cut,omitempty"`
	// TopK is the number of candidates returned (0 means 10; negative: all).
	TopK int `json:"top_k,omitempty"`
	// Blocks bounds the blocks the DP assigns: a model with more layers is coarsened into
	// this many blocks of balanced time (0 means 64).
	Blocks int `json:"blocks,omitempty"`
	// DeviceSpeed is each device type's speed relative to the device the profile ran on
	// (a T4 at 0.3: its times are the profile's / 0.3); a type not listed runs at 1.
	DeviceSpeed map[string]float64 `json:"device_speed,omitempty"`
	// Optimizer names the optimizer whose state memory counts: "auto" (the profiled one,
	// else adam), "adam", "momentum", "sgd", "none" ("" means auto).
	Optimizer string `json:"optimizer,omitempty"`
	// Slots is rotor's memory discretization (0: its default).
	Slots int64 `json:"slots,omitempty"`
	// Calibration, when set, scales the predicted computation and communication and adds
	// a per-iteration overhead (planner/calibration; chainplan advice calibrate fits it
	// from measured runs on the cluster).
	Calibration *calibration.Calibration `json:"calibration,omitempty"`
}

// OptionError reports a bad option of the search3d request; Field is the request field's
// name. It is the one chainplan.OptionError.
type OptionError = chainplan.OptionError

// optionError is the OptionError of field.
func optionError(field, msg string) error {
	return &OptionError{Planner: "search3d", Field: field, Msg: msg}
}

const (
	defaultTopK   = 10
	defaultBlocks = 64
	maxBlocks     = 512
	maxGBS        = 1 << 30
)

func (o Options) withDefaults(devicesPerNode int) (Options, error) {
	if o.GlobalBatch < 1 || o.GlobalBatch > maxGBS {
		return o, optionError("global_batch", fmt.Sprintf("want the samples of one iteration, 1..%d (got %d)", maxGBS, o.GlobalBatch))
	}
	switch {
	case o.TMPMax == 0:
		o.TMPMax = devicesPerNode
	case o.TMPMax < 0:
		return o, optionError("tmp_max", fmt.Sprintf("want ≥ 1, or 0 for the devices per node (got %d)", o.TMPMax))
	}
	if err := oneOf(&o.Schedule, "schedule", Schedule1F1B, ScheduleGPipe); err != nil {
		return o, err
	}
	if err := oneOf(&o.MemoryCheck, "memory_check", MemoryRotor, MemoryDrop, MemoryOff); err != nil {
		return o, err
	}
	if err := oneOf(&o.Cut, "cut", CutAMP, CutMadPipe, CutBest); err != nil {
		return o, err
	}
	if err := oneOf(&o.Optimizer, "optimizer", "auto", "adam", "momentum", "sgd", "none"); err != nil {
		return o, err
	}
	if o.TopK == 0 {
		o.TopK = defaultTopK
	}
	switch {
	case o.Blocks == 0:
		o.Blocks = defaultBlocks
	case o.Blocks < 1 || o.Blocks > maxBlocks:
		return o, optionError("blocks", fmt.Sprintf("want 1..%d blocks (got %d)", maxBlocks, o.Blocks))
	}
	for t, s := range o.DeviceSpeed {
		if math.IsNaN(s) || math.IsInf(s, 0) || s <= 0 {
			return o, optionError("device_speed", fmt.Sprintf("device type %q: want a positive relative speed (got %v)", t, s))
		}
	}
	if o.Calibration != nil {
		if err := o.Calibration.Check(); err != nil {
			return o, optionError("calibration", err.Error())
		}
	}
	if o.Slots < 0 {
		return o, optionError("slots", fmt.Sprintf("want ≥ 1, or 0 for rotor's default (got %d)", o.Slots))
	}
	return o, nil
}

// oneOf sets *v to the first allowed value when empty and checks it otherwise.
func oneOf(v *string, field string, allowed ...string) error {
	if *v == "" {
		*v = allowed[0]
		return nil
	}
	if !slices.Contains(allowed, *v) {
		return optionError(field, fmt.Sprintf("unknown value %q (want %s)", *v, strings.Join(allowed, ", ")))
	}
	return nil
}

// speed returns the relative speed of a device type.
func (o *Options) speed(deviceType string) float64 {
	if s, ok := o.DeviceSpeed[deviceType]; ok {
		return s
	}
	return 1
}
