package offload

import (
	"errors"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/testchains"
	"github.com/chainplan/chainplan/planner/rotor"
)

// wantRefused fails unless err is a *chainplan.SizeError (errors.Is ErrUnsupported, the
// CLI's exit status 2) containing every want, and the call allocated at most max bytes.
func wantRefused(t *testing.T, what string, err error, allocated, maxBytes uint64, want ...string) {
	t.Helper()
	var se *chainplan.SizeError
	if !errors.As(err, &se) || !errors.Is(err, chainplan.ErrUnsupported) {
		t.Fatalf("%s: %v, want a *chainplan.SizeError", what, err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: %q does not say %q", what, err, w)
		}
	}
	if allocated > maxBytes {
		t.Errorf("%s: allocated %d bytes before refusing, want at most %d", what, allocated, maxBytes)
	}
}

// TestLongChainRefused: on the 40 000-stage chain of issue 33 every planner of the family
// and its smallest-budget search refuse with a *chainplan.SizeError naming the chain's
// length and the limit, before any table or replay is allocated (the replay's analysis
// alone would hold 48 GiB). Before the limits, POFO's smallest budget, AUTOCAPPER and
// OPPORTUNIST died allocating 4 MiB to 77 GB, GREEDY after 52 s at 2.3 GB.
func TestLongChainRefused(t *testing.T) {
	c := testchains.Long(testchains.LongStages)
	opts := Options{BandwidthBytesPerS: 12e9}
	budget := rotor.StoreAllPeak(c) / 2
	for _, tt := range []struct {
		algo      string
		solve     Solver
		minBudget func(*chainplan.Chain, Options) (int64, error)
	}{
		{"pofo", SolvePOFO, MinBudgetPOFO},
		{"offload", SolveDynProg, MinBudgetDynProg},
		{"greedy", SolveGreedy, MinBudgetGreedy},
		{"autocapper", SolveAutoCapper, MinBudgetAutoCapper},
		{"opportunist", SolveOpportunist, MinBudgetOpportunist},
	} {
		var err error
		n := testchains.Allocated(func() { _, err = tt.solve(c, budget, opts) })
		want := []string{tt.algo + ": a chain of 40000 stages is too large", "over the limit of 2.00 GiB", "--algo sequential --segments 200"}
		wantRefused(t, tt.algo, err, n, testchains.MaxAllocBytes, want...)
		n = testchains.Allocated(func() { _, err = tt.minBudget(c, opts) })
		wantRefused(t, tt.algo+" smallest budget", err, n, testchains.MaxAllocBytes, want...)
	}
}

// TestPOFOGridSuggested: a POFO grid over the limit is refused with the finest that fits,
// and that grid passes the check.
func TestPOFOGridSuggested(t *testing.T) {
	c := testchains.Long(400)
	budget := rotor.StoreAllPeak(c) / 2
	_, err := SolvePOFO(c, budget, Options{BandwidthBytesPerS: 12e9, Slots: 200})
	wantRefused(t, "pofo at 200 slots", err, 0, 0, "a chain of 400 stages", "use fewer slots (the default for this chain is 50;")
	m := regexp.MustCompile(`at most (\d+) fit`).FindStringSubmatch(err.Error())
	if m == nil {
		t.Fatalf("%q suggests no grid", err)
	}
	slots, _ := strconv.ParseInt(m[1], 10, 64)
	if err := checkTableSize(c, budget, slots); err != nil || slots < 2 {
		t.Fatalf("the suggested grid of %d slots: %v", slots, err)
	}
	if err := checkTableSize(c, budget, slots+1); err == nil {
		t.Fatalf("%d slots fit too: the suggestion is not the finest", slots+1)
	}
}

// TestHeuristicsStopAtTheLimit: the tables that grow as a heuristic explores stop at the
// limit: OPPORTUNIST's rematerialization table (filled top-down, slab by slab), DYNPROG's
// states (kept per stage for the backtrack) and AUTOCAPPER's rotor tables each refuse
// under a limit of 4 MiB, having allocated little more than that.
func TestHeuristicsStopAtTheLimit(t *testing.T) {
	c := testchains.Long(120)
	opts := Options{BandwidthBytesPerS: 12e9}
	budget := rotor.StoreAllPeak(c) / 3
	t.Setenv(chainplan.TableLimitEnv, "4MiB")
	for _, tt := range []struct {
		algo  string
		solve Solver
		want  string
	}{
		{"opportunist", SolveOpportunist, "the table of its rematerialization"},
		{"offload", SolveDynProg, "its states"},
		{"autocapper", SolveAutoCapper, "the rotor tables of its rematerialization"},
	} {
		var err error
		n := testchains.Allocated(func() { _, err = tt.solve(c, budget, opts) })
		wantRefused(t, tt.algo, err, n, 64<<20, tt.algo+": a chain of 120 stages is too large", tt.want,
			"over the limit of 4.00 MiB")
	}
}

// TestShippedChainsFit: the chains the project ships pass the family's checks at half
// their no-recomputation peak: the replay, POFO's tables at its default grid and
// AUTOCAPPER's rotor tables (the CLI's TestShippedChainsFitTheLimits plans them with the
// others, which are fast enough to run whole).
func TestShippedChainsFit(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "examples", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join("..", "..", "testdata", "profiles", "resnet.chain.json"))
	for _, f := range files {
		c, err := chainplan.ReadChain(f)
		if err != nil {
			continue // not a chain
		}
		c = c.Conservative()
		budget := rotor.StoreAllPeak(c) / 2
		if err := checkReplay("pofo", c); err != nil {
			t.Errorf("%s: %v", f, err)
		}
		if err := checkTableSize(c, budget, POFOSlots(c.Len())); err != nil {
			t.Errorf("%s: %v", f, err)
		}
		if _, err := rotor.Solve(c, budget, rotorOptions(Options{}, c.Len()+1)); errors.Is(err, chainplan.ErrUnsupported) {
			t.Errorf("%s: autocapper's rotor: %v", f, err)
		}
	}
}
