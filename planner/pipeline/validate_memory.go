package pipeline

import (
	"fmt"
	"math"

	"github.com/chainplan/chainplan/pipeplan"
)

// memory computes each device's memory in both models of spec §3.4.3, with the
// transient memory of the operations (memory.go), and checks the time-resolved peak
// against the problem's limit and the plan's memory_per_gpu.
//
// A mini-batch's stored bytes of stage k are allocated when its F starts and released
// when its B ends; at an instant where one B ends and an F starts, the release comes
// first. With the paper's shifts, the number stored at time t is
//
//	n_k(t) = (h_B − h_F) + ⌊(t − t_F)/T⌋ − ⌊(t − t_B − d_B)/T⌋,
//
// NCA_k = n_k(t_F). While an operation of the device runs, its transient bytes come on
// top of what is stored; counts only change at forward starts and backward ends, so the
// device peaks at the start of one of its operations: the time-resolved peak is the
// static bytes plus the largest, over the device's F and B, of Σ_k n_k(start)·stored_k
// plus that operation's transient (a backward's own mini-batch still held).
func (v *validator) memory() {
	pr, p := v.pr, v.p
	n := len(p.Stages)
	rep := v.rep
	rep.NCA = make([]int, n)
	rep.Static = pr.DeviceStatic(p.Stages)
	rep.MemoryNCA = make([]int64, p.GPUs)
	rep.MemoryPeak = make([]int64, p.GPUs)
	costs := make([]StageCost, n)
	for k, s := range p.Stages {
		c, err := pr.Cost(s)
		if err != nil {
			v.issue(fmt.Sprintf("stages[%d].recompute", k), "%v", err)
			return
		}
		costs[k] = c
	}
	T := p.Period
	// count returns n_k(t); own keeps stage k's mini-batch whose B starts at t held.
	count := func(k int, t float64, own bool) int {
		f, b := p.Pattern[v.op[pipeplan.F][k]], p.Pattern[v.op[pipeplan.B][k]]
		released := floorTol((t - b.Start - b.Duration) / T)
		if own {
			released = -1 // the backward starting at t releases at its end
		}
		return b.Shift - f.Shift + floorTol((t-f.Start)/T) - released
	}
	extra := make([]int64, p.GPUs)
	for k, s := range p.Stages {
		rep.NCA[k] = count(k, p.Pattern[v.op[pipeplan.F][k]].Start, false)
		if rep.NCA[k] < 0 {
			v.issue(fmt.Sprintf("stages[%d]", k), "%d activations stored at the start of its forward: its backward ends before its forward starts", rep.NCA[k])
		}
		rep.MemoryNCA[s.GPU] = satAdd(rep.MemoryNCA[s.GPU], satMul(int64(max(rep.NCA[k], 0)), costs[k].Stored))
		extra[s.GPU] = max(extra[s.GPU], costs[k].FwdExtra, costs[k].BwdExtra)
	}
	for g := range p.GPUs {
		rep.MemoryNCA[g] = satAdd(satAdd(rep.MemoryNCA[g], rep.Static[g]), extra[g])
		var peak int64
		on := p.StagesOn(g)
		for _, k := range on {
			for _, kind := range []pipeplan.OpKind{pipeplan.F, pipeplan.B} {
				o := p.Pattern[v.op[kind][k]]
				act := costs[k].FwdExtra
				if kind == pipeplan.B {
					act = costs[k].BwdExtra
				}
				for _, j := range on {
					act = satAdd(act, satMul(int64(max(count(j, o.Start, kind == pipeplan.B && j == k), 0)), costs[j].Stored))
				}
				peak = max(peak, act)
			}
		}
		rep.MemoryPeak[g] = satAdd(rep.Static[g], peak)
		if m := pr.Limit(); rep.MemoryPeak[g] > m {
			what := ""
			if h := pr.Options().Headroom; h > 0 {
				what = fmt.Sprintf(" (%d less its headroom of %.3g)", pr.Options().MemoryBytes, h)
			}
			v.issue(fmt.Sprintf("gpu %d", g), "needs %d bytes at its peak, more than the memory %d%s", rep.MemoryPeak[g], m, what)
		}
		if g < len(p.MemoryPerGPU) && p.MemoryPerGPU[g] != rep.MemoryPeak[g] {
			v.issue(fmt.Sprintf("memory_per_gpu[%d]", g), "the plan says %d bytes, the model gives %d", p.MemoryPerGPU[g], rep.MemoryPeak[g])
		}
	}
}

// floorTol is ⌊x⌋ with x rounded up when within tolerance below an integer: pattern times
// are float sums, and an instant that should fall on a period boundary must count as on it.
func floorTol(x float64) int { return int(math.Floor(x + tolerance)) }

func satAdd(a, b int64) int64 {
	if a > saturated-b {
		return saturated
	}
	return a + b
}

func satMul(a, b int64) int64 {
	if a > 0 && b > saturated/a {
		return saturated
	}
	return a * b
}
