package pipeline

import (
	"fmt"
	"math"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/pipeplan"
)

// element is one resource of the transformed chain of spec §1.7: a stage (on its device)
// or a communication pseudo-stage (on a link; forward a_ℓ/β, backward δ_ℓ/β).
type element struct {
	f, b  float64
	stage int  // the stage, or for a communication the stage whose output it carries
	comm  bool // a CF/CB pair rather than an F/B pair
}

// transformed returns the transformed chain of a contiguous allocation: every stage, with
// its forward and backward durations (Cost), and a communication pseudo-stage after each
// stage whose successor is on another device. Errors are Cost's.
func transformed(pr *Problem, stages []pipeplan.Stage) ([]element, error) {
	var out []element
	for k, s := range stages {
		c, err := pr.Cost(s)
		if err != nil {
			return nil, err
		}
		out = append(out, element{f: c.Fwd, b: c.Bwd, stage: k})
		if k+1 < len(stages) && stages[k+1].GPU != s.GPU {
			d := pr.Transfer(s.Last)
			out = append(out, element{f: d, b: d, stage: k, comm: true})
		}
	}
	return out, nil
}

// checkContiguous refuses stages that are not a contiguous allocation of pr's layers on
// pr's devices.
func checkContiguous(pr *Problem, stages []pipeplan.Stage) error {
	if len(stages) == 0 {
		return fmt.Errorf("%w: no stages", chainplan.ErrUnsupported)
	}
	next := 1
	for k, s := range stages {
		if s.First != next || s.Last < s.First || s.Last > pr.L() || s.GPU < 0 || s.GPU >= pr.opts.GPUs {
			return fmt.Errorf("%w: stage %d (%d..%d on device %d) does not continue a partition of layers 1..%d on %d devices",
				chainplan.ErrUnsupported, k, s.First, s.Last, s.GPU, pr.L(), pr.opts.GPUs)
		}
		next = s.Last + 1
	}
	if next != pr.L()+1 {
		return fmt.Errorf("%w: the stages end at layer %d of %d", chainplan.ErrUnsupported, next-1, pr.L())
	}
	if !pipeplan.IsContiguous(stages) {
		return fmt.Errorf("%w: 1F1B* needs a contiguous allocation (one stage per device at most)", chainplan.ErrUnsupported)
	}
	return nil
}

// OneFOneBStar returns the 1F1B*(T) pattern of a contiguous allocation (spec §1.7,
// Algorithm 6 of the thesis, with communications as pseudo-stages): groups formed from the
// end while their load fits in T; in each group the forwards back to back, then the
// backwards back to back in reverse ("V-shape"), backwards shifted by the group index − 1;
// groups connected forward to forward; every operation then wrapped into [0, T). Each stage
// of group g stores g mini-batches' activations, the least any 1-periodic pattern of period
// T can (Theorem 15). The plan's algo is "1f1b*", its MemoryPerGPU the validator's
// time-resolved peak; the memory limit is not checked (BestPeriod finds the T where it
// holds). O(S) for S stages, plus the validation of the result.
//
// Errors: ErrUnsupported when the stages are not a contiguous allocation of pr or when T
// is smaller than the load of some stage or communication (no 1-periodic pattern exists).
func OneFOneBStar(pr *Problem, stages []pipeplan.Stage, T float64) (*pipeplan.Plan, error) {
	if err := checkContiguous(pr, stages); err != nil {
		return nil, err
	}
	elems, err := transformed(pr, stages)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", chainplan.ErrUnsupported, err)
	}
	for _, e := range elems {
		if !Fits(e.f+e.b, T) || math.IsNaN(T) {
			return nil, fmt.Errorf("%w: period %g is below the load %g of a stage or link", chainplan.ErrUnsupported, T, e.f+e.b)
		}
	}
	grp := groups(elems, T)
	n := len(elems)
	tF, tB := make([]float64, n), make([]float64, n)
	for k := 1; k < n; k++ {
		tF[k] = tF[k-1] + elems[k-1].f
	}
	for hi := n - 1; hi >= 0; {
		lo := hi
		for lo > 0 && grp[lo-1] == grp[hi] {
			lo--
		}
		tB[hi] = tF[hi] + elems[hi].f
		for k := hi - 1; k >= lo; k-- {
			tB[k] = tB[k+1] + elems[k+1].b
		}
		hi = lo - 1
	}
	p := pr.Header("1f1b*", T)
	p.Stages = append([]pipeplan.Stage(nil), stages...)
	for k, e := range elems {
		fk, bk := pipeplan.F, pipeplan.B
		if e.comm {
			fk, bk = pipeplan.CF, pipeplan.CB
		}
		p.Pattern = append(p.Pattern, wrap(pipeplan.Op{Op: fk, Stage: e.stage, Start: tF[k], Duration: e.f}, T),
			wrap(pipeplan.Op{Op: bk, Stage: e.stage, Start: tB[k], Duration: e.b, Shift: grp[k] - 1}, T))
	}
	if err := Finalize(pr, p, false); err != nil {
		return nil, err
	}
	return p, nil
}

// wrap brings an operation's start into [0, T), raising its shift by the number of
// periods removed (spec §1.7 phase 3; a forward chain longer than 2T wraps more than once,
// spec §7 item 13). A start within planTolerance of a period boundary snaps onto it.
func wrap(o pipeplan.Op, T float64) pipeplan.Op {
	q := math.Floor(o.Start / T)
	o.Start -= q * T
	o.Shift += int(q)
	if o.Start >= T*(1-planTolerance) {
		o.Start = 0
		o.Shift++
	}
	if o.Start < 0 {
		o.Start = 0
	}
	return o
}

// Finalize completes a plan a planner built: it sets Contiguous, fills MemoryPerGPU with
// the validator's time-resolved peak of each device and validates the plan against pr.
// With checkMemory false, the memory limit is the only check it skips. A plan that fails
// is a planner's bug, reported as an internal error wrapping chainplan.ErrInvalidPlan.
func Finalize(pr *Problem, p *pipeplan.Plan, checkMemory bool) error {
	p.Contiguous = pipeplan.IsContiguous(p.Stages)
	p.MemoryPerGPU = make([]int64, p.GPUs)
	q := pr
	if !checkMemory {
		q = pr.WithMemory(math.MaxInt64)
	}
	if rep := Validate(q, p); rep.MemoryPeak != nil {
		copy(p.MemoryPerGPU, rep.MemoryPeak)
	}
	if err := Check(q, p); err != nil {
		return fmt.Errorf("%s: internal error: the plan fails the validator: %w", p.Algo, err)
	}
	return nil
}
