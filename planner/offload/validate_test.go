package offload_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/testchains"
	"github.com/chainplan/chainplan/planner/offload"
)

// TestValidate checks the family's validator on POFO's plan of the spec's example: the
// plan passes in both models; a wrong claim, a moved position and a timing that starts a
// transfer too early are each named in their own list; a plan without its offload section
// is refused.
func TestValidate(t *testing.T) {
	c := testchains.PofoExample(1)
	p, err := offload.SolvePOFO(c, 22, offload.Options{BandwidthBytesPerS: 1, Slots: -1})
	if err != nil {
		t.Fatal(err)
	}
	v, err := offload.Validate(c, p, 22)
	if err != nil || !v.Main.Valid || len(v.Issues()) != 0 || len(v.Estimates) != 2 {
		t.Fatalf("POFO's plan: %+v, %v", v, err)
	}
	if v.Main.Makespan != p.Makespan || v.Main.PeakBytes != p.PeakBytes {
		t.Fatalf("replay %v/%d, plan %v/%d", v.Main.Makespan, v.Main.PeakBytes, p.Makespan, p.PeakBytes)
	}

	claim := *p
	claim.Makespan++
	if v, err := offload.Validate(c, &claim, 22); err != nil || len(v.Claims) != 1 || !strings.Contains(v.Claims[0].Msg, "claims makespan") {
		t.Fatalf("a wrong makespan: %+v, %v", v, err)
	}

	moved := *p
	off := *p.Offload
	off.Positions = append([]chainplan.Position(nil), p.Offload.Positions...)
	last := len(off.Positions) - 1
	if off.Positions[last].WaitBefore != nil {
		w := len(p.Sequence) - 1
		off.Positions[last].WaitBefore = &w
	}
	off.Positions[last].IssueAfter = len(p.Sequence) - 1
	moved.Offload = &off
	if v, err := offload.Validate(c, &moved, 22); err != nil || len(v.Positions) == 0 || len(v.Claims) != 0 {
		t.Fatalf("a moved position: %+v, %v", v, err)
	}

	early := *p
	toff := *p.Offload
	tm := *p.Offload.Timing
	tm.TransferStart = append([]float64(nil), tm.TransferStart...)
	tm.TransferStart[len(tm.TransferStart)-1] = 0
	toff.Timing = &tm
	early.Offload = &toff
	if v, err := offload.Validate(c, &early, 22); err != nil || len(v.Timing) == 0 || !strings.HasPrefix(v.Timing[0].Msg, "the plan's timing: ") {
		t.Fatalf("a prefetch started at 0: %+v, %v", v, err)
	}

	none := *p
	none.Offload = nil
	if _, err := offload.Validate(c, &none, 22); !errors.Is(err, chainplan.ErrInvalidPlan) {
		t.Fatalf("no offload section: %v", err)
	}
}
