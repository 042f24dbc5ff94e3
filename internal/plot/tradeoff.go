package plot

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner"
	"github.com/chainplan/chainplan/planner/baseline"
	"github.com/chainplan/chainplan/planner/rotor"
	"github.com/chainplan/chainplan/planner/simulate"
)

// Defaults of the offloading series of FrontierOf. POFO takes seconds a budget on a chain
// of 20 to 70 stages on its own default grid (up to 243 slots), and under a second on 50
// slots, so its series is sampled, not swept, on the coarse grid.
const (
	DefaultOffloadBudgets = 6
	DefaultOffloadSlots   = 50
)

// FrontierOptions says what FrontierOf computes. The zero value draws rotor, revolve,
// checkpoint_sequential and store-all on rotor's default grid.
type FrontierOptions struct {
	// Title of the picture; empty means "Budget versus time".
	Title string
	// Slots is the grid of the rotor and revolve frontiers (0: 500).
	Slots int64
	// BandwidthBytesPerS, when positive, adds POFO and offload-only, each solved at Budgets
	// budgets spread evenly from its smallest feasible budget to the store-all peak.
	BandwidthBytesPerS float64
	// Budgets is the number of budgets of each offloading series (0: DefaultOffloadBudgets).
	Budgets int
	// OffloadSlots is the grid of the offloading solves (0: DefaultOffloadSlots).
	OffloadSlots int64
	// Overhead draws the overhead over no recomputation instead of the makespan.
	Overhead bool
	// Chosen, when set, is marked on the picture.
	Chosen *chainplan.Plan
}

// FrontierOf computes the series Frontier draws for chain c: rotor's and revolve's optimal
// makespan at every budget (planner.Frontier), checkpoint_sequential at each segment
// count 1..L and store-all at their exact peaks (replayed by the simulator), and with a
// bandwidth POFO and offload-only at a few budgets. Errors: ErrInvalidChain, and the
// planners' errors.
//
// Its cost is two rotor frontiers, L replays of O(L) operations, and 2×Budgets offloading
// solves run on all cores.
func FrontierOf(c *chainplan.Chain, opts FrontierOptions) (*FrontierData, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	d := &FrontierData{Title: opts.Title, SumTime: c.SumTime(), Overhead: opts.Overhead}
	if d.Title == "" {
		d.Title = "Budget versus time"
	}
	for _, algo := range []string{"rotor", "revolve"} {
		f, err := planner.Frontier(c, planner.Request{Algo: algo, Slots: opts.Slots})
		if err != nil {
			return nil, fmt.Errorf("%s frontier: %w", algo, err)
		}
		s := Series{Name: algo, Kind: Steps}
		for _, p := range f.Points {
			s.Points = append(s.Points, Point{Bytes: float64(p.BudgetBytes), Makespan: p.Makespan})
		}
		d.Series = append(d.Series, s)
	}
	seq := Series{Name: "sequential", Kind: Points}
	for k := 1; k <= c.Len(); k++ {
		rep := simulate.Replay(c, baseline.SequentialSequence(c.Len(), k), -1)
		if err := rep.Err(); err != nil {
			return nil, fmt.Errorf("sequential with %d segments: %w", k, err)
		}
		seq.Points = append(seq.Points, Point{Bytes: float64(rep.Peak), Makespan: rep.Makespan})
	}
	d.Series = append(d.Series, seq, Series{Name: "store-all", Kind: Points,
		Points: []Point{{Bytes: float64(rotor.StoreAllPeak(c)), Makespan: d.SumTime}}})
	if opts.BandwidthBytesPerS > 0 {
		n := opts.Budgets
		if n <= 0 {
			n = DefaultOffloadBudgets
		}
		slots := opts.OffloadSlots
		if slots <= 0 {
			slots = DefaultOffloadSlots
		}
		for _, algo := range []string{"pofo", "offload"} {
			s, err := offloadSeries(c, planner.Request{Algo: algo, Bandwidth: opts.BandwidthBytesPerS, Slots: slots}, n)
			if err != nil {
				return nil, err
			}
			d.Series = append(d.Series, s)
		}
	}
	if p := opts.Chosen; p != nil {
		d.Chosen = &Mark{Label: fmt.Sprintf("%s at %s", p.Algo, chainplan.FormatBytes(p.BudgetBytes)),
			Point: Point{Bytes: float64(p.BudgetBytes), Makespan: p.Makespan}}
	}
	return d, nil
}

// offloadSeries solves req.Algo at n budgets spread evenly from its smallest feasible budget to
// the store-all peak, concurrently (the solves are independent).
func offloadSeries(c *chainplan.Chain, req planner.Request, n int) (Series, error) {
	algo := req.Algo
	lo, err := planner.MinBudget(c, req)
	if err != nil {
		return Series{}, fmt.Errorf("%s: smallest budget: %w", algo, err)
	}
	hi := max(lo, rotor.StoreAllPeak(c))
	budgets := []int64{lo}
	for i := 1; i < n && hi > lo; i++ {
		budgets = append(budgets, lo+int64(float64(hi-lo)*float64(i)/float64(n-1)))
	}
	pts := make([]Point, len(budgets))
	errs := make([]error, len(budgets))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i, b := range budgets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			r := req
			r.BudgetBytes = b
			p, err := planner.Solve(c, r)
			if err != nil {
				errs[i] = fmt.Errorf("%s at %d bytes: %w", algo, b, err)
				return
			}
			pts[i] = Point{Bytes: float64(b), Makespan: p.Makespan}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return Series{}, err
		}
	}
	return Series{Name: algo, Kind: Points, Points: pts}, nil
}
