package pipeline

import (
	"fmt"
	"math"
)

// memory computes each device's memory in both models of spec §3.4.3 and checks the
// time-resolved peak against the problem's limit and the plan's memory_per_gpu.
//
// A mini-batch's activations of stage k are allocated when its F starts and released when
// its B ends; at an instant where one B ends and an F starts, the release comes first. With
// the paper's shifts, the number stored at time t is
//
//	n_k(t) = (h_B − h_F) + ⌊(t − t_F)/T⌋ − ⌊(t − t_B − d_B)/T⌋,
//
// NCA_k = n_k(t_F), and a device's activations peak at the start of one of its forwards.
func (v *validator) memory() {
	pr, p := v.pr, v.p
	o := pr.Options()
	n := len(p.Stages)
	rep := v.rep
	rep.NCA = make([]int, n)
	rep.Static = make([]int64, p.GPUs)
	rep.MemoryNCA = make([]int64, p.GPUs)
	rep.MemoryPeak = make([]int64, p.GPUs)
	stored := make([]int64, n)
	for k, s := range p.Stages {
		var w int64
		for l := s.First; l <= s.Last; l++ {
			w += pr.Layer(l).Param
			if o.ActivationModel == ActivationsInput {
				stored[k] += pr.Out(l - 1)
			} else {
				stored[k] += pr.Layer(l).Saved
				if l < s.Last {
					stored[k] -= pr.Layer(l).Freed
				}
			}
		}
		if o.ActivationModel != ActivationsInput {
			stored[k] += pr.Out(s.First - 1)
		}
		rep.Static[s.GPU] += int64(o.WeightCopies) * w
		if v.crosses(k) {
			// One buffer for the activation and one for its gradient, on both sides.
			buf := 2 * pr.Layer(s.Last).Out
			rep.Static[s.GPU] += buf
			rep.Static[p.Stages[k+1].GPU] += buf
		}
	}
	T := p.Period
	count := func(k int, t float64) int {
		f, b := p.Pattern[v.op[F][k]], p.Pattern[v.op[B][k]]
		return b.Shift - f.Shift + floorTol((t-f.Start)/T) - floorTol((t-b.Start-b.Duration)/T)
	}
	for k, s := range p.Stages {
		rep.NCA[k] = count(k, p.Pattern[v.op[F][k]].Start)
		if rep.NCA[k] < 0 {
			v.issue(fmt.Sprintf("stages[%d]", k), "%d activations stored at the start of its forward: its backward ends before its forward starts", rep.NCA[k])
		}
		rep.MemoryNCA[s.GPU] = satAdd(rep.MemoryNCA[s.GPU], satMul(int64(max(rep.NCA[k], 0)), stored[k]))
	}
	for g := range p.GPUs {
		rep.MemoryNCA[g] = satAdd(rep.MemoryNCA[g], rep.Static[g])
		var peak int64
		for _, k := range p.StagesOn(g) {
			t := p.Pattern[v.op[F][k]].Start
			var act int64
			for _, j := range p.StagesOn(g) {
				act = satAdd(act, satMul(int64(max(count(j, t), 0)), stored[j]))
			}
			peak = max(peak, act)
		}
		rep.MemoryPeak[g] = satAdd(rep.Static[g], peak)
		if m := o.MemoryBytes; rep.MemoryPeak[g] > m {
			v.issue(fmt.Sprintf("gpu %d", g), "needs %d bytes at its peak, more than the memory %d", rep.MemoryPeak[g], m)
		}
		if g < len(p.MemoryPerGPU) && p.MemoryPerGPU[g] != rep.MemoryPeak[g] {
			v.issue(fmt.Sprintf("memory_per_gpu[%d]", g), "the plan says %d bytes, the model gives %d", p.MemoryPerGPU[g], rep.MemoryPeak[g])
		}
	}
}

// floorTol is ⌊x⌋ with x rounded up when within Tolerance below an integer: pattern times
// are float sums, and an instant that should fall on a period boundary must count as on it.
func floorTol(x float64) int { return int(math.Floor(x + Tolerance)) }

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
