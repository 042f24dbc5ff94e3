package pipeline

import (
	"fmt"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/rotor"
)

// The pipeline family's limits (docs/pipeline.md, "Limits"), which every planner checks
// (CheckPlanning) before it allocates: the partitioning DPs of the planners (contiguous's
// feasibility DP and min-max DP, PipeDream's DP, pipesim's balanced partition) keep a
// table of (L+1)×(P+1) cells, at most cellBytes each, and with Checkpoint the stages that
// recompute read one rotor table over the whole chain (rotor.SubChains), quadratic in L.
// Requests whose tables would pass chainplan.TableLimit, or one run of whose partitioning
// DPs would pass maxRunSteps, are refused with a *chainplan.SizeError. The planners whose
// time grows faster than that check their own work (madpipe, pipedream).

// cellBytes bounds the memory of a cell of the partitioning DPs: contiguous's position
// (16 bytes), next stage and budget (8 each), and a slice header per row.
const cellBytes = 32

// maxRunSteps bounds one run of the partitioning DPs, L(L+1)/2·min(P, L) steps (a stage
// i..j tried per cell): contiguous runs its feasibility DP dozens of times (a bisection on
// the period) beside two min-max DPs, at 1 to 10 ns a step on the 2-core reference
// machine, so 3·10⁸ steps keep a plan within a few minutes; a 1000-layer chain on 8
// devices takes 4·10⁶ steps a run and plans in a second.
const maxRunSteps = 3e8

// CheckPlanning refuses (a *chainplan.SizeError) to plan p when the planners' tables would
// pass chainplan.TableLimit or one run of their partitioning DPs maxRunSteps. The planners
// call it first, and so does a caller of contiguous.Balanced, which returns no error.
// Replaying or validating a plan needs none of it.
func (p *Problem) CheckPlanning() error {
	l, gpus := len(p.layers), p.opts.GPUs
	rows := float64(l+1) * 3 * 24 // the slice headers of contiguous's three tables
	err := chainplan.CheckTables("pipeline", l,
		fmt.Sprintf("the partitioning DPs' tables (%d layers × %d devices)", l+1, gpus+1),
		float64(l+1)*float64(gpus+1)*cellBytes+rows,
		func(limit int64) string {
			if most := int((float64(limit)-rows)/(float64(l+1)*cellBytes)) - 1; most >= 1 && most < gpus {
				return fmt.Sprintf("use at most %d devices (--gpus)", most)
			}
			return "split the chain, or merge consecutive layers"
		})
	if err != nil {
		return err
	}
	if steps := float64(l) * float64(l+1) / 2 * float64(min(gpus, l)); steps > maxRunSteps {
		fix := "merge consecutive layers (a chain of fewer stages)"
		if most := int(maxRunSteps / (float64(l) * float64(l+1) / 2)); most >= 2 && most < gpus {
			fix = fmt.Sprintf("use at most %d devices (--gpus), or %s", most, fix)
		}
		return &chainplan.SizeError{Algo: "pipeline", Stages: l,
			What:      fmt.Sprintf("one run of the partitioning DPs on %d devices", gpus),
			NeedSteps: steps, LimitSteps: maxRunSteps, Fix: fix}
	}
	if !p.opts.Checkpoint {
		return nil
	}
	return rotor.CheckSubChains(p.chain, p.tableBytes(), recomputeSlots)
}
