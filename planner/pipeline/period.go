package pipeline

import (
	"slices"
	"sort"

	"github.com/chainplan/chainplan/pipeplan"
)

// BestPeriod returns the smallest period T at which the 1F1B*(T) pattern of a contiguous
// allocation fits pr's memory on every device, exactly (spec §3.1, "exact alternative" of
// Algorithm 7): the grouping, hence the memory, changes only where T crosses the load of a
// run of consecutive elements of the transformed chain, so the answer is the smallest
// fitting value among the largest element load and the O(S²) sums of consecutive
// elements, found by binary search on the sorted candidates with the monotone memory test
// (NCA never grows with T). ok is false when even one group (T = the whole transformed
// chain's load) does not fit, or when the stages are not a contiguous allocation of pr.
// O(S² log S) for S stages.
func BestPeriod(pr *Problem, stages []pipeplan.Stage) (T float64, ok bool) {
	if checkContiguous(pr, stages) != nil {
		return 0, false
	}
	elems, err := transformed(pr, stages)
	if err != nil {
		return 0, false
	}
	cands := candidates(elems)
	i := sort.Search(len(cands), func(i int) bool { return fitsMemory(pr, stages, elems, cands[i]) })
	if i == len(cands) {
		return 0, false
	}
	return cands[i], true
}

// candidates returns the sorted, distinct periods at which the 1F1B* grouping of elems may
// change and that every element fits in: the largest element load and every sum of
// consecutive element loads at least as large.
func candidates(elems []element) []float64 {
	var lo float64
	for _, e := range elems {
		lo = max(lo, e.f+e.b)
	}
	out := []float64{lo}
	for a := range elems {
		var s float64
		for b := a; b < len(elems); b++ {
			s += elems[b].f + elems[b].b
			if s > lo {
				out = append(out, s)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// fitsMemory reports whether every stage's 1F1B*(T) memory, SoleMemory with its group
// index, fits pr's memory.
func fitsMemory(pr *Problem, stages []pipeplan.Stage, elems []element, T float64) bool {
	grp := groups(elems, T)
	for k, e := range elems {
		if e.comm {
			continue
		}
		m, err := pr.SoleMemory(stages[e.stage], grp[k])
		if err != nil || m > pr.Limit() {
			return false
		}
	}
	return true
}

// ScheduleContiguous returns the 1F1B* plan of a contiguous allocation at BestPeriod, its
// memory checked by the validator, named algo. ok is false when no period fits.
func ScheduleContiguous(pr *Problem, stages []pipeplan.Stage, algo string) (p *pipeplan.Plan, ok bool, err error) {
	T, ok := BestPeriod(pr, stages)
	if !ok {
		return nil, false, nil
	}
	if p, err = OneFOneBStar(pr, stages, T); err != nil {
		return nil, false, err
	}
	p.Algo = algo
	if err := Finalize(pr, p, true); err != nil {
		return nil, false, err
	}
	return p, true, nil
}
