package rotor

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/discretize"
	"github.com/chainplan/chainplan/planner/internal/testchains"
)

// wantRefused fails unless err is a *chainplan.SizeError (errors.Is ErrUnsupported: the
// CLI's exit status 2) whose message contains every want, and the call allocated less than
// testchains.MaxAllocBytes.
func wantRefused(t *testing.T, what string, err error, allocated uint64, want ...string) {
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
	if allocated > testchains.MaxAllocBytes {
		t.Errorf("%s: allocated %d bytes before refusing, want at most %d", what, allocated, testchains.MaxAllocBytes)
	}
}

// TestLongChainRefused: on the 40 000-stage chain of issue 33, whose feasibility table
// alone would take 24 GiB, every solver of the package (rotor, rotor-ops, revolve, their
// smallest budget and frontier, optimal, the sub-chain table of the pipelines) refuses
// with a *chainplan.SizeError naming the chain's length, the size and the limit, and the
// linear-memory algorithm to use instead, before any table is allocated. Before the
// limits, rotor allocated the 12.8 GB feasibility table at once.
func TestLongChainRefused(t *testing.T) {
	c := testchains.Long(testchains.LongStages)
	budget := int64(3 << 30)
	stages := fmt.Sprintf("a chain of %d stages", testchains.LongStages)
	persistent := []string{stages, "over the limit of 2.00 GiB (CHAINPLAN_TABLE_LIMIT)", "--algo sequential --segments 200"}
	for _, opts := range []Options{{}, {StageOptions: true}, {Revolve: true}} {
		name := opts.algo()
		var err error
		n := testchains.Allocated(func() { _, err = Solve(c, budget, opts) })
		wantRefused(t, name+" Solve", err, n, append(persistent, name+":", "sub-chains × 499 budgets")...)
		n = testchains.Allocated(func() { _, err = MinBudget(c, opts) })
		wantRefused(t, name+" MinBudget", err, n, append(persistent, "2 feasibility tables of 40001×40001")...)
		n = testchains.Allocated(func() { _, err = SolveMin(c, opts) })
		wantRefused(t, name+" SolveMin", err, n, persistent...)
		n = testchains.Allocated(func() { _, err = SolveFrontier(c, opts) })
		wantRefused(t, name+" SolveFrontier", err, n, persistent...)
	}
	var err error
	n := testchains.Allocated(func() { _, err = SolveFloating(c, budget, Options{}) })
	wantRefused(t, "SolveFloating", err, n, stages, "optimal:", "O(S·L^6)", "use --algo rotor")
	n = testchains.Allocated(func() { _, err = MinBudgetFloating(c, Options{}) })
	wantRefused(t, "MinBudgetFloating", err, n, stages, "optimal:", "its smallest budget")
	n = testchains.Allocated(func() { _, err = NewSubChains(c, budget, 0) })
	wantRefused(t, "NewSubChains", err, n, stages, "pipeline checkpointing:", "no --checkpoint")
}

// TestFewerSlotsSuggested: a chain whose persistent table passes the limit at the default
// 500 slots but not at fewer is told the largest slot count that fits, and that slot count
// does fit.
func TestFewerSlotsSuggested(t *testing.T) {
	c := testchains.Long(1200)
	budget := int64(40 << 30)
	_, err := Solve(c, budget, Options{})
	wantRefused(t, "Solve", err, 0, "a chain of 1200 stages", "use --slots ")
	m := regexp.MustCompile(`--slots (\d+) or fewer`).FindStringSubmatch(err.Error())
	if m == nil {
		t.Fatalf("%q suggests no slot count", err)
	}
	slots, _ := strconv.ParseInt(m[1], 10, 64)
	if slots < 2 || slots >= DefaultSlots {
		t.Fatalf("suggested %d slots, want fewer than %d", slots, DefaultSlots)
	}
	for _, s := range []int64{slots, slots + 10} {
		dc := discretize.ForBudget(c, budget, s)
		err := checkTables(dc, oneNeed, dc.Units(budget)-dc.A[0], Options{Slots: s})
		if (err == nil) != (s == slots) {
			t.Errorf("%d slots: %v; want the suggested count to fit and 10 more not to", s, err)
		}
	}
}

// TestTableLimitOverride: $CHAINPLAN_TABLE_LIMIT lowers (or raises) the limit: a chain that
// plans under the default is refused under 1 MiB, the message naming that limit.
func TestTableLimitOverride(t *testing.T) {
	c := testchains.Long(100)
	if _, err := Solve(c, 4<<30, Options{}); err != nil {
		t.Fatalf("under the default limit: %v", err)
	}
	t.Setenv(chainplan.TableLimitEnv, "1MiB")
	_, err := Solve(c, 4<<30, Options{})
	wantRefused(t, "Solve under 1 MiB", err, 0, "a chain of 100 stages", "over the limit of 1.00 MiB", "use --slots ")
}
