package madpipe

import (
	"fmt"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/pipeline"
)

// MadPipe's limits (docs/pipeline.md, "Limits"). Phase 1's DP memoises its states top-down
// on the snapped grid, so how many it visits is not known beforehand; it counts its steps
// (one candidate last stage tried, in solve or room) and the memory of its memoised
// entries as it goes, and a DP that would pass either limit stops and the request is
// refused with a *chainplan.SizeError, before the maps grow past chainplan.TableLimit:
//
//   - maxLayers and maxGPUs: a packed state holds the layer in 10 bits and the free
//     devices in 8 (packKey); longer chains or more devices would share states;
//   - maxDPSteps bounds one DP run (one target period of Algorithm 1): the shared PipeDream
//     profiles take at most 1.7·10⁷ steps (densenet121, 77 layers, P = 8 with --checkpoint;
//     5·10⁶ at P = 16), at 3·10⁵ to 1.3·10⁶ steps a second on the 2-core reference
//     machine, so the limit stops a run after a few minutes at most;
//   - chainplan.TableLimit bounds the memoised entries, counted at memoEntryBytes,
//     normalEntryBytes and roomEntryBytes each (a Go map's key, value and slack).
const (
	maxLayers  = 1<<10 - 1
	maxGPUs    = 1 << 8
	maxDPSteps = 1e8

	memoEntryBytes   = 64
	normalEntryBytes = 112
	roomEntryBytes   = 48
)

// dpBudget counts a DP run's steps and memoised bytes.
type dpBudget struct {
	steps, bytes float64
	limitBytes   float64
	over         bool
	overSteps    bool // the steps, not the memory, ran out
}

func newDPBudget() dpBudget {
	limit, err := chainplan.TableLimit()
	if err != nil {
		limit = chainplan.DefaultTableLimitBytes // checkProblem reported it first
	}
	return dpBudget{limitBytes: float64(limit)}
}

// step counts one step and reports whether the DP may go on.
func (b *dpBudget) step() bool {
	if b.over {
		return false
	}
	if b.steps++; b.steps > maxDPSteps {
		b.over, b.overSteps = true, true
	}
	return !b.over
}

// keep counts a memoised entry of size bytes and reports whether it may be stored.
func (b *dpBudget) keep(size float64) bool {
	if b.over {
		return false
	}
	if b.bytes+size > b.limitBytes {
		b.over = true
		return false
	}
	b.bytes += size
	return true
}

// checkProblem refuses, before phase 1 runs, a problem too large for the family's
// planners (pipeline.Problem.CheckPlanning) or a chain or a device count that its packed
// states cannot hold.
func checkProblem(pr *pipeline.Problem) error {
	if err := pr.CheckPlanning(); err != nil {
		return err
	}
	l, p := pr.L(), pr.Options().GPUs
	if l <= maxLayers && p <= maxGPUs {
		return nil
	}
	e := &chainplan.SizeError{Algo: Algo, Stages: l,
		What:      fmt.Sprintf("phase 1's DP, whose packed states hold at most %d layers and %d devices,", maxLayers, maxGPUs),
		NeedSteps: float64(l), LimitSteps: maxLayers, Unit: "layers",
		Fix: "use --algo contiguous (the optimal contiguous plan, without this limit)"}
	if l <= maxLayers {
		e.NeedSteps, e.LimitSteps, e.Unit = float64(p), maxGPUs, "devices"
	}
	return e
}

// overError is the refusal of a DP run that passed its limits.
func overError(pr *pipeline.Problem, b *dpBudget) error {
	fix := "use --algo contiguous (the optimal contiguous plan, whose time grows with L²·P)"
	if b.overSteps {
		return &chainplan.SizeError{Algo: Algo, Stages: pr.L(),
			What:      fmt.Sprintf("phase 1's DP on %d devices", pr.Options().GPUs),
			NeedSteps: b.steps, AtLeast: true, LimitSteps: maxDPSteps, Fix: fix}
	}
	return &chainplan.SizeError{Algo: Algo, Stages: pr.L(),
		What:      fmt.Sprintf("phase 1's memoised states on %d devices", pr.Options().GPUs),
		NeedBytes: int64(b.bytes), AtLeast: true, LimitBytes: int64(b.limitBytes), Fix: fix}
}
