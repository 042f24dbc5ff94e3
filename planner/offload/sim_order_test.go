package offload_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/testchains"
	"github.com/chainplan/chainplan/planner/offload"
	"github.com/chainplan/chainplan/planner/offload/internal/units"
	"github.com/chainplan/chainplan/planner/rotor"
)

// orderPlans returns plans of every offloading algorithm on random chains, at budgets
// between LowBudget and the store-all peak, in both memory models.
func orderPlans(t *testing.T, n int) []struct {
	c *chainplan.Chain
	p *chainplan.Plan
} {
	t.Helper()
	rng := rand.New(rand.NewPCG(71, 72))
	solvers := []offload.Solver{offload.SolvePOFO, offload.SolveDynProg, offload.SolveGreedy, offload.SolveAutoCapper, offload.SolveOpportunist}
	var out []struct {
		c *chainplan.Chain
		p *chainplan.Plan
	}
	for i := 0; i < n; i++ {
		c := testchains.Random(rng, 2+rng.IntN(8), testchains.RandomOptions{MaxSize: 1 << 20, MaxOverhead: 1 << 18, Float: true})
		low, peak := offload.LowBudget(c), rotor.StoreAllPeak(c)
		b := low + int64(rng.Float64()*float64(peak-low))
		opts := offload.Options{BandwidthBytesPerS: float64(1<<20) * (0.2 + 3*rng.Float64()), Slots: 30,
			Model: []chainplan.MemoryModel{chainplan.Fractional, chainplan.Integral}[i%2]}
		for _, solve := range solvers {
			if p, err := solve(c, b, opts); err == nil {
				out = append(out, struct {
					c *chainplan.Chain
					p *chainplan.Plan
				}{c, p})
			}
		}
	}
	return out
}

// TestPositionsEventOrder checks the executor's positions of every algorithm's plans
// against the simulator's timing of the same plan (the one in the plan, in its memory
// model), independently of how Positions derives them:
//
//   - issue: in link order; never later than the simulator starts the transfer (the
//     operation it follows ends by then); an offload right after its anchor and a prefetch
//     just before the operation running when the copy starts, unless link order or the loss
//     (which the executor runs outside its sequence) moves it later;
//   - wait: before the prefetch's anchor (after the loss's backward for B L+1), which the
//     simulator starts only once the copy has ended;
//   - release: after every forward operation that reads the offloaded tensor between the
//     issue and the prefetch, and no later than the simulator's integral model frees it
//     (when the copy ends, or when the last operation that started reading it before then
//     ends), so that the real memory never exceeds the simulated peak.
func TestPositionsEventOrder(t *testing.T) {
	n := 120
	if testing.Short() {
		n = 40
	}
	checked := 0
	for k, cp := range orderPlans(t, n) {
		c, p := cp.c, cp.p
		o := p.Offload
		ex := units.Exact(c)
		lg := offload.Analyze(ex, offload.ScheduleOf(p))
		cut := lg.Loss
		start, end := o.Timing.ComputeStart, make([]float64, len(p.Sequence))
		for i, op := range p.Sequence {
			end[i] = start[i] + ex.UF[op.Stage]
			if op.Kind == chainplan.B {
				end[i] = start[i] + ex.UB[op.Stage]
			}
		}
		tol := 1e-9 * max(1, end[len(end)-1])
		xs := o.Timing.TransferStart
		where := func(j int) string { return fmt.Sprintf("plan %d (%s), transfer %d (%s)", k, p.Algo, j, o.Transfers[j]) }
		prev := -1
		for j, tr := range o.Transfers {
			ps := o.Positions[j]
			i := ps.IssueAfter
			xe := xs[j] + float64(tr.Bytes)/o.BandwidthBytesPerS
			if i < prev {
				t.Fatalf("%s: issued after op %d, before the previous transfer (%d)", where(j), i, prev)
			}
			moved := i == prev || i == cut+1 // by link order, or past the loss
			if i >= 0 && i != cut+1 && end[i] > xs[j]+tol {
				t.Fatalf("%s: issued after op %d, which ends at %v, after the copy starts (%v)", where(j), i, end[i], xs[j])
			}
			if tr.Dir == chainplan.TransferPrefetch {
				if !moved && start[i+1] > xs[j]+tol {
					t.Fatalf("%s: issued before op %d (starts %v), not the one running at %v", where(j), i+1, start[i+1], xs[j])
				}
				w := *ps.WaitBefore
				if w != tr.Anchor && !(tr.Anchor == cut+1 && w == cut+2) || xe > start[tr.Anchor]+tol {
					t.Fatalf("%s: waited for before op %d, copy ends %v, anchor starts %v", where(j), w, xe, start[tr.Anchor])
				}
			} else {
				if !moved && i != tr.Anchor {
					t.Fatalf("%s: issued after op %d, not after its anchor", where(j), i)
				}
				r := *ps.ReleaseAfter
				id := offloadedBy(lg.Insts, j)
				in := &lg.Insts[id]
				until := len(p.Sequence)
				if in.Pre >= 0 {
					until = o.Positions[in.Pre].IssueAfter + 1
				}
				simRelease := xe
				for _, rd := range in.Readers {
					if rd > i && rd < until && p.Sequence[rd].Kind != chainplan.B && rd > r {
						t.Fatalf("%s: released after op %d, before op %d reads it", where(j), r, rd)
					}
					if start[rd] <= xe+tol {
						simRelease = max(simRelease, end[rd])
					}
				}
				if r != cut+1 && end[max(r, 0)] > simRelease+tol && r != i {
					t.Fatalf("%s: released after op %d (ends %v), the simulator frees it at %v", where(j), r, end[r], simRelease)
				}
			}
			prev = i
			checked++
		}
	}
	if checked < 100 {
		t.Fatalf("only %d transfers checked", checked)
	}
}

// offloadedBy returns the instance that transfer j offloads.
func offloadedBy(insts []offload.Instance, j int) int {
	for id := range insts {
		if insts[id].Off == j {
			return id
		}
	}
	panic("no instance for the offload")
}

// TestCheckPositions checks that the checker names a position that differs from the one
// the transfers and timing give, accepts the planner's own, and has nothing to compare on a
// plan written before positions existed.
func TestCheckPositions(t *testing.T) {
	var cp struct {
		c *chainplan.Chain
		p *chainplan.Plan
	}
	for _, x := range orderPlans(t, 10) {
		if len(x.p.Offload.Transfers) >= 2 {
			cp = x
			break
		}
	}
	if cp.p == nil {
		t.Fatal("no plan with transfers")
	}
	if is, err := offload.CheckPositions(cp.c, cp.p); err != nil || len(is) != 0 {
		t.Fatalf("the planner's positions: %v %v", is, err)
	}
	o := *cp.p.Offload
	o.Positions = append([]chainplan.Position(nil), o.Positions...)
	o.Positions[0].IssueAfter++
	bad := *cp.p
	bad.Offload = &o
	is, err := offload.CheckPositions(cp.c, &bad)
	if err != nil || len(is) != 1 || is[0].Transfer != 0 || !strings.Contains(is[0].Msg, "positions[0].issue_after is") {
		t.Fatalf("a moved issue: %v %v", is, err)
	}
	o.Positions = nil
	if is, err := offload.CheckPositions(cp.c, &bad); err != nil || is != nil {
		t.Fatalf("no positions: %v %v", is, err)
	}
}
