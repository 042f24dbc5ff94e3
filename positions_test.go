package chainplan

import (
	"errors"
	"strings"
	"testing"
)

// TestParsePlanPositions checks the structural rules of offload.positions: one entry per
// transfer with the fields of its direction, in range, issued in link order, an offload
// not before its anchor and released after it is issued, a prefetch waited for after it is
// issued and not before its anchor. Whether they are the positions the transfers and the
// timing give is planner/offload's check (TestPositionsEventOrder, TestCheckPositions).
func TestParsePlanPositions(t *testing.T) {
	// F_all 1, F_all 2 (the loss), B 2, B 1, with a0 offloaded from the start and
	// prefetched before B 1; the executor issues the prefetch after the loss.
	const head = `{"algo":"pofo","sequence":[{"op":"F_all","stage":1},{"op":"F_all","stage":2},{"op":"B","stage":2},{"op":"B","stage":1}],` +
		`"offload":{"bandwidth_bytes_per_s":1,"memory_model":"fractional","sync_at_loss":true,` +
		`"transfers":[{"dir":"offload","tensor":"a0","bytes":1,"after":-1},{"dir":"prefetch","tensor":"a0","bytes":1,"before":3}],"positions":`
	tests := []struct {
		name, positions, want string
	}{
		{"Valid", `[{"issue_after":-1,"release_after":0},{"issue_after":2,"wait_before":3}]`, ""},
		{"Count", `[{"issue_after":-1,"release_after":0}]`, "positions: 1 entries for 2 transfers"},
		{"IssueRange", `[{"issue_after":-2,"release_after":0},{"issue_after":2,"wait_before":3}]`, "positions[0].issue_after (offload a0 after -1): -2 out of range -1..3"},
		{"LinkOrder", `[{"issue_after":2,"release_after":2},{"issue_after":1,"wait_before":3}]`, "positions[1].issue_after (prefetch a0 before 3): 1, before the previous transfer's 2"},
		{"OffloadWait", `[{"issue_after":-1,"wait_before":0},{"issue_after":2,"wait_before":3}]`, `positions[0] (offload a0 after -1): an offload needs "release_after"`},
		{"PrefetchRelease", `[{"issue_after":-1,"release_after":0},{"issue_after":2,"release_after":3}]`, `positions[1] (prefetch a0 before 3): a prefetch needs "wait_before"`},
		{"ReleaseBeforeIssue", `[{"issue_after":1,"release_after":0},{"issue_after":2,"wait_before":3}]`, "positions[0].release_after (offload a0 after -1): 0 out of range 1..3"},
		{"WaitBeforeAnchor", `[{"issue_after":-1,"release_after":0},{"issue_after":1,"wait_before":2}]`, "positions[1].wait_before (prefetch a0 before 3): 2 out of range 3..3"},
		{"WaitNotAfterIssue", `[{"issue_after":-1,"release_after":0},{"issue_after":3,"wait_before":3}]`, "positions[1].issue_after (prefetch a0 before 3): 3, not before wait_before 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParsePlan([]byte(head + tt.positions + "}}"))
			if tt.want == "" {
				if err != nil || len(p.Offload.Positions) != 2 || *p.Offload.Positions[0].ReleaseAfter != 0 ||
					*p.Offload.Positions[1].WaitBefore != 3 || p.Offload.Positions[1].ReleaseAfter != nil {
					t.Fatalf("ParsePlan: %v %+v", err, p)
				}
				return
			}
			if !errors.Is(err, ErrInvalidPlan) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ParsePlan error %v, want ErrInvalidPlan mentioning %q", err, tt.want)
			}
		})
	}
	// A document written before the positions existed still reads.
	p, err := ParsePlan([]byte(strings.TrimSuffix(head, `,"positions":`) + "}}"))
	if err != nil || p.Offload.Positions != nil {
		t.Fatalf("without positions: %v %+v", err, p)
	}
}
