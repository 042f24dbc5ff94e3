package offload

import (
	"fmt"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/testchains"
)

// TestPositionsSpecSchedules derives the executor's positions of the POFO schedules of spec
// §5.8 from their timings, worked by hand: an offload issued after its anchor and released
// after the forward that reads it while it is copied; a prefetch issued before the operation
// running at its planned start, waited for before its anchor; without a timing, prefetches
// in a synchronized schedule are issued after the loss.
func TestPositionsSpecSchedules(t *testing.T) {
	c := testchains.PofoExample(1)
	off, pre := chainplan.TransferOffload, chainplan.TransferPrefetch
	tests := []struct {
		name   string
		ops    string
		xfers  []chainplan.Transfer
		timing *chainplan.Timing
		want   string // issue_after/wait_before or release_after per transfer
	}{
		{"M22Beta1", "Fck1 Fall2 Fall3 Fall4 Fall5 B5 B4 B3 B2 Fall1 B1",
			[]chainplan.Transfer{xf(off, "a0", 2, -1), xf(pre, "a0", 2, 9)},
			&chainplan.Timing{ComputeStart: []float64{0, 1, 3, 4, 6, 6.5, 7, 11, 13, 17, 18}, TransferStart: []float64{0, 15}},
			// a0 is read by F_ck 1 while it is copied; the prefetch starts during B 2 (op 8).
			"-1/r0 7/w9"},
		{"M18Beta4", "Fall1 Fall2 Fall3 Fall4 Fall5 B5 B4 B3 B2 B1",
			[]chainplan.Transfer{xf(off, "a0", 2, -1), xf(off, "abar1", 6, 0), xf(pre, "abar1", 6, 8), xf(pre, "a0", 2, 9)},
			&chainplan.Timing{ComputeStart: []float64{0, 1, 3, 4, 6, 6.5, 7, 11, 14.25, 18.25}, TransferStart: []float64{0, 1, 12.75, 17.75}},
			// ā_1 is read by F_all 2 (op 1); the prefetches start during B 3 and B 2.
			"-1/r0 0/r1 6/w8 7/w9"},
		{"M18Beta4NoTiming", "Fall1 Fall2 Fall3 Fall4 Fall5 B5 B4 B3 B2 B1",
			[]chainplan.Transfer{xf(off, "a0", 2, -1), xf(off, "abar1", 6, 0), xf(pre, "abar1", 6, 8), xf(pre, "a0", 2, 9)},
			nil, "-1/r0 0/r1 5/w8 5/w9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Schedule{Compute: testchains.Ops(tt.ops), Transfers: tt.xfers, SyncAtLoss: true}
			ps, err := Positions(c, s, tt.timing)
			if err != nil {
				t.Fatal(err)
			}
			if got := formatPositions(ps); got != tt.want {
				t.Fatalf("Positions()=%s, want %s", got, tt.want)
			}
		})
	}
}

// TestPositionsLoss checks the positions around the loss, which the executor runs outside
// its sequence: an offload of a_L (after F_ck 4, op 3) read by the loss's forward is
// released after the loss's backward (op 5), and a prefetch before B L+1 is issued and
// waited for after it.
func TestPositionsLoss(t *testing.T) {
	c := testchains.PofoExample(1)
	off, pre := chainplan.TransferOffload, chainplan.TransferPrefetch
	s := Schedule{Compute: testchains.Ops("Fall1 Fall2 Fall3 Fck4 Fall5 B5 Fall4 B4 B3 B2 B1"),
		Transfers: []chainplan.Transfer{xf(off, "a4", 1, 3), xf(pre, "a4", 1, 5)}, SyncAtLoss: true}
	ps, err := Positions(c, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := formatPositions(ps), "3/r5 5/w6"; got != want {
		t.Fatalf("Positions()=%s, want %s", got, want)
	}
}

// TestPositionsRefused checks the errors: a schedule with logical issues, and a link order
// that would issue a prefetch after its anchor.
func TestPositionsRefused(t *testing.T) {
	c := testchains.PofoExample(1)
	off, pre := chainplan.TransferOffload, chainplan.TransferPrefetch
	storeAll := testchains.Ops("Fall1 Fall2 Fall3 Fall4 Fall5 B5 B4 B3 B2 B1")
	if _, err := Positions(c, Schedule{Compute: storeAll, Transfers: []chainplan.Transfer{xf(off, "a0", 2, -1)}}, nil); err == nil {
		t.Fatal("accepted an offload never prefetched")
	}
	// The prefetch of a0 comes first on the link and starts during op 9 in this timing, so
	// that of ā_1, needed before op 8, would be issued after it.
	s := Schedule{Compute: storeAll, Transfers: []chainplan.Transfer{xf(off, "a0", 2, -1), xf(off, "abar1", 6, 0),
		xf(pre, "a0", 2, 9), xf(pre, "abar1", 6, 8)}}
	tm := &chainplan.Timing{ComputeStart: []float64{0, 1, 3, 4, 6, 6.5, 7, 11, 14.25, 18.25}, TransferStart: []float64{0, 1, 18.3, 18.4}}
	if _, err := Positions(c, s, tm); err == nil {
		t.Fatal("accepted a prefetch issued after its anchor")
	}
}

// formatPositions writes positions compactly: issue_after, then /w and wait_before or /r and
// release_after.
func formatPositions(ps []chainplan.Position) string {
	out := ""
	for i, p := range ps {
		if i > 0 {
			out += " "
		}
		switch {
		case p.WaitBefore != nil:
			out += fmt.Sprintf("%d/w%d", p.IssueAfter, *p.WaitBefore)
		case p.ReleaseAfter != nil:
			out += fmt.Sprintf("%d/r%d", p.IssueAfter, *p.ReleaseAfter)
		}
	}
	return out
}
