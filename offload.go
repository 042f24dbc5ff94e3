package chainplan

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// This file holds the offloading extension of the plan format (pofo spec §5.1): a plan
// whose activations may also travel to host memory over one GPU↔host link. The compute
// sequence stays in Plan.Sequence; Plan.Offload adds the bandwidth, the ordered transfers
// and their anchors, and the timing. docs/formats-schedule.md documents the JSON.

// MemoryModel says how a transfer occupies GPU memory while it runs (pofo spec §1.5).
type MemoryModel string

// The two memory models of the pofo spec.
const (
	// Fractional is O.7''/OR.5: memory is released continuously while an offload runs
	// and reserved continuously while a prefetch runs. The planners optimize this model.
	Fractional MemoryModel = "fractional"
	// Integral is O.7, the real behaviour: an offload releases its tensor when it
	// completes, a prefetch reserves the whole tensor when it starts.
	Integral MemoryModel = "integral"
)

// Valid reports whether m is one of the two memory models.
func (m MemoryModel) Valid() bool { return m == Fractional || m == Integral }

// TransferDir is the direction of a transfer on the GPU↔host link.
type TransferDir string

// The two transfer directions.
const (
	// TransferOffload copies a tensor from the GPU to the host and frees its GPU copy.
	TransferOffload TransferDir = "offload"
	// TransferPrefetch copies an offloaded tensor back to the GPU before it is read again.
	TransferPrefetch TransferDir = "prefetch"
)

// Tensor names an activation that can be offloaded: the plain output a_ℓ of stage ℓ, or
// ā_ℓ, everything F_all of stage ℓ saved (pofo spec §1.1). The chain input is a_0 ≡ ā_0
// and is always written "a0". In JSON a tensor is a string: "a3", "abar3", "a0".
type Tensor struct {
	Stage int  // ℓ, 0..L
	Saved bool // ā_ℓ rather than a_ℓ; always false for ℓ = 0
}

// String returns the tensor's name, e.g. "a3" or "abar3".
func (t Tensor) String() string {
	if t.Saved && t.Stage > 0 {
		return fmt.Sprintf("abar%d", t.Stage)
	}
	return fmt.Sprintf("a%d", t.Stage)
}

// ParseTensor reads a tensor name: "a<ℓ>" or "abar<ℓ>" with ℓ ≥ 0. "abar0" is read as
// "a0", the chain input.
func ParseTensor(s string) (Tensor, error) {
	var t Tensor
	rest, ok := strings.CutPrefix(s, "abar")
	if ok {
		t.Saved = true
	} else if rest, ok = strings.CutPrefix(s, "a"); !ok {
		return Tensor{}, fmt.Errorf("tensor %q: want a<stage> or abar<stage>", s)
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 || rest == "" || rest[0] == '+' || rest[0] == '-' {
		return Tensor{}, fmt.Errorf("tensor %q: want a<stage> or abar<stage> with a stage ≥ 0", s)
	}
	t.Stage = n
	if n == 0 {
		t.Saved = false
	}
	return t, nil
}

// MarshalText writes the tensor's name.
func (t Tensor) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText reads a tensor name (see ParseTensor).
func (t *Tensor) UnmarshalText(b []byte) error {
	v, err := ParseTensor(string(b))
	if err != nil {
		return err
	}
	*t = v
	return nil
}

// Transfer is one copy on the single link. Its Anchor is a 0-based index into the plan's
// compute sequence: an offload may start once that operation has ended (−1: from time 0,
// only for the chain input a0); a prefetch must have completed before that operation
// starts. In JSON the anchor is written "after" for an offload and "before" for a
// prefetch, as in pofo spec §5.1.
type Transfer struct {
	Dir    TransferDir
	Tensor Tensor
	Bytes  int64 // the tensor's size; the simulator checks it against the chain
	Anchor int
}

// transferJSON is the wire form of a Transfer.
type transferJSON struct {
	Dir    TransferDir `json:"dir"`
	Tensor Tensor      `json:"tensor"`
	Bytes  int64       `json:"bytes"`
	After  *int        `json:"after,omitempty"`
	Before *int        `json:"before,omitempty"`
}

// MarshalJSON writes {"dir", "tensor", "bytes"} and "after" or "before".
func (t Transfer) MarshalJSON() ([]byte, error) {
	w := transferJSON{Dir: t.Dir, Tensor: t.Tensor, Bytes: t.Bytes}
	anchor := t.Anchor
	if t.Dir == TransferPrefetch {
		w.Before = &anchor
	} else {
		w.After = &anchor
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads a transfer; an offload needs "after" and a prefetch "before".
func (t *Transfer) UnmarshalJSON(b []byte) error {
	var w transferJSON
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return err
	}
	switch w.Dir {
	case TransferOffload:
		if w.After == nil || w.Before != nil {
			return errors.New(`an offload needs "after" (and no "before")`)
		}
		t.Anchor = *w.After
	case TransferPrefetch:
		if w.Before == nil || w.After != nil {
			return errors.New(`a prefetch needs "before" (and no "after")`)
		}
		t.Anchor = *w.Before
	default:
		return fmt.Errorf("unknown dir %q (want offload or prefetch)", w.Dir)
	}
	t.Dir, t.Tensor, t.Bytes = w.Dir, w.Tensor, w.Bytes
	return nil
}

// String writes the transfer compactly, e.g. "offload a0 after -1" or
// "prefetch abar2 before 9".
func (t Transfer) String() string {
	if t.Dir == TransferPrefetch {
		return fmt.Sprintf("prefetch %s before %d", t.Tensor, t.Anchor)
	}
	return fmt.Sprintf("offload %s after %d", t.Tensor, t.Anchor)
}

// Timing gives the start time of every compute operation and of every transfer, in the
// chain's time unit, under the plan's memory model. A transfer of x bytes lasts
// x/bandwidth and an operation its stage's measured time.
type Timing struct {
	ComputeStart  []float64 `json:"compute_start"`
	TransferStart []float64 `json:"transfer_start"`
}

// Estimate is the simulated outcome of an offloading plan under one memory model.
type Estimate struct {
	MemoryModel MemoryModel `json:"memory_model"`
	Valid       bool        `json:"valid"`
	Makespan    float64     `json:"makespan"`
	PeakBytes   int64       `json:"peak_bytes"`
}

// Offload is the offloading part of a plan (pofo spec §5.1): one compute stream runs
// Plan.Sequence, one copy link runs Transfers in list order, offloads first.
type Offload struct {
	// BandwidthBytesPerS is β, the link bandwidth in bytes per time unit of the chain.
	BandwidthBytesPerS float64 `json:"bandwidth_bytes_per_s"`
	// MemoryModel is the model of Plan.Makespan, Plan.PeakBytes and Timing.
	MemoryModel MemoryModel `json:"memory_model"`
	// SyncAtLoss marks a schedule under OR.3 (pofo spec §4.2): every offload completes
	// before the backward of the loss starts and every prefetch starts after the loss's
	// forward ends. Without it the link's two phases may overlap the junction.
	SyncAtLoss bool `json:"sync_at_loss"`
	// OffloadedBytes is the total size of the offloaded tensors.
	OffloadedBytes int64 `json:"offloaded_bytes"`
	// Transfers lists the copies in link order.
	Transfers []Transfer `json:"transfers"`
	// Timing is the no-wait timing of the schedule (optional in input files).
	Timing *Timing `json:"timing,omitempty"`
	// Estimates holds the simulated makespan and peak under both memory models.
	Estimates []Estimate `json:"estimates,omitempty"`
	// Positions says, one entry per transfer in link order, where the offloading executor
	// issues, waits for and releases it (planner/offload.Positions). The planners always
	// write it; it is absent from documents written before it existed.
	Positions []Position `json:"positions,omitempty"`
}

// Position is where the offloading executor handles one transfer between the operations
// of Plan.Sequence, as 0-based operation indices (docs/formats-schedule.md, "Positions").
// The executor runs the loss's forward and backward (F_all L+1, B L+1) together in the
// training script, so no position falls between them.
type Position struct {
	// IssueAfter is the operation after which the transfer is issued on the link (−1:
	// before the first operation).
	IssueAfter int `json:"issue_after"`
	// WaitBefore, for a prefetch, is the operation before which the compute stream waits
	// for the copy to complete. Nil for an offload.
	WaitBefore *int `json:"wait_before,omitempty"`
	// ReleaseAfter, for an offload, is the operation after which the tensor's device memory
	// is released (−1: before the first operation). Nil for a prefetch.
	ReleaseAfter *int `json:"release_after,omitempty"`
}

// checkPositions validates the positions of transfers over a sequence of n operations:
// one per transfer, in range, the fields of its direction, issued in link order, an offload
// not before its anchor and released after it is issued, a prefetch waited for after it is
// issued and not before its anchor. Whether they are the ones the transfers and the timing
// give is planner/offload's check.
func checkPositions(ps []Position, ts []Transfer, n int) error {
	if len(ps) != len(ts) {
		return fmt.Errorf("positions: %d entries for %d transfers", len(ps), len(ts))
	}
	prev := -1
	for j, p := range ps {
		t := ts[j]
		at := func(field string) string { return fmt.Sprintf("positions[%d].%s (%s)", j, field, t) }
		switch {
		case p.IssueAfter < -1 || p.IssueAfter >= n:
			return fmt.Errorf("%s: %d out of range -1..%d", at("issue_after"), p.IssueAfter, n-1)
		case p.IssueAfter < prev:
			return fmt.Errorf("%s: %d, before the previous transfer's %d (transfers are issued in link order)", at("issue_after"), p.IssueAfter, prev)
		}
		prev = p.IssueAfter
		if t.Dir == TransferPrefetch {
			switch {
			case p.WaitBefore == nil || p.ReleaseAfter != nil:
				return fmt.Errorf("positions[%d] (%s): a prefetch needs \"wait_before\" (and no \"release_after\")", j, t)
			case *p.WaitBefore < t.Anchor || *p.WaitBefore >= n:
				return fmt.Errorf("%s: %d out of range %d..%d (its anchor to the last operation)", at("wait_before"), *p.WaitBefore, t.Anchor, n-1)
			case p.IssueAfter >= *p.WaitBefore:
				return fmt.Errorf("%s: %d, not before wait_before %d", at("issue_after"), p.IssueAfter, *p.WaitBefore)
			}
			continue
		}
		switch {
		case p.ReleaseAfter == nil || p.WaitBefore != nil:
			return fmt.Errorf("positions[%d] (%s): an offload needs \"release_after\" (and no \"wait_before\")", j, t)
		case p.IssueAfter < t.Anchor:
			return fmt.Errorf("%s: %d, before its anchor %d", at("issue_after"), p.IssueAfter, t.Anchor)
		case *p.ReleaseAfter < p.IssueAfter || *p.ReleaseAfter >= n:
			return fmt.Errorf("%s: %d out of range %d..%d (from issue_after to the last operation)", at("release_after"), *p.ReleaseAfter, p.IssueAfter, n-1)
		}
	}
	return nil
}

// check validates the offload part of a plan whose sequence has n operations. Whether the
// transfers make sense for a chain is the simulator's business.
func (o *Offload) check(n int) error {
	if b := o.BandwidthBytesPerS; math.IsNaN(b) || math.IsInf(b, 0) || b <= 0 {
		return fmt.Errorf("bandwidth_bytes_per_s must be positive and finite (got %v)", b)
	}
	if !o.MemoryModel.Valid() {
		return fmt.Errorf("unknown memory_model %q (want fractional or integral)", o.MemoryModel)
	}
	for i, t := range o.Transfers {
		lo := -1
		if t.Dir == TransferPrefetch {
			lo = 0
		}
		if t.Anchor < lo || t.Anchor >= n {
			return fmt.Errorf("transfers[%d] (%s): anchor out of range %d..%d", i, t, lo, n-1)
		}
		if t.Bytes < 0 {
			return fmt.Errorf("transfers[%d] (%s): negative bytes %d", i, t, t.Bytes)
		}
	}
	if o.Positions != nil {
		if err := checkPositions(o.Positions, o.Transfers, n); err != nil {
			return err
		}
	}
	if tm := o.Timing; tm != nil {
		if len(tm.ComputeStart) != n || len(tm.TransferStart) != len(o.Transfers) {
			return fmt.Errorf("timing has %d compute and %d transfer starts, want %d and %d",
				len(tm.ComputeStart), len(tm.TransferStart), n, len(o.Transfers))
		}
		for _, v := range append(append([]float64(nil), tm.ComputeStart...), tm.TransferStart...) {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return fmt.Errorf("timing: start time %v is not a finite, non-negative number", v)
			}
		}
	}
	return nil
}
