package chainplan_test

import (
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
)

// replayChain is four stages, the middle two drawing random numbers (500 and 700 bytes of
// state: the sizes differ so that each sum names its stages).
func replayChain() *chainplan.Chain {
	st := func(name string, replay int64) chainplan.Stage {
		return chainplan.Stage{Name: name, FwdTime: 1, BwdTime: 2, OutBytes: 100, SavedBytes: 200, ReplayBytes: replay}
	}
	return &chainplan.Chain{Format: chainplan.ChainFormatV2, InputBytes: 100,
		Stages: []chainplan.Stage{st("a", 0), st("drop1", 500), st("drop2", 700), st("head", 0)}}
}

func TestReplayStateBytes(t *testing.T) {
	c := replayChain()
	op := func(k chainplan.OpKind, stage int) chainplan.Op { return chainplan.Op{Kind: k, Stage: stage} }
	tests := []struct {
		name string
		seq  []chainplan.Op
		want int64
	}{
		{"StoreAllKeepsNone", chainplan.StoreAllSequence(4), 0},
		// drop1 runs F_ck then F_all: its state (500) and the one a forward takes (700,
		// the largest) are held.
		{"RecomputedRandomStage", []chainplan.Op{op(chainplan.FAll, 1), op(chainplan.FCk, 2), op(chainplan.FAll, 3),
			op(chainplan.FAll, 4), op(chainplan.FAll, 5), op(chainplan.B, 5), op(chainplan.B, 4), op(chainplan.B, 3),
			op(chainplan.FAll, 2), op(chainplan.B, 2), op(chainplan.B, 1)}, 500 + 700},
		// Only stage 1, which draws nothing, is recomputed: no state is kept.
		{"RecomputedPlainStage", []chainplan.Op{op(chainplan.FCk, 1), op(chainplan.FAll, 2), op(chainplan.FAll, 3),
			op(chainplan.FAll, 4), op(chainplan.FAll, 5), op(chainplan.B, 5), op(chainplan.B, 4), op(chainplan.B, 3),
			op(chainplan.B, 2), op(chainplan.FAll, 1), op(chainplan.B, 1)}, 0},
		// An option replays its stage's draws before its backward: drop2 keeps its state.
		{"Option", []chainplan.Op{op(chainplan.FAll, 1), op(chainplan.FAll, 2), {Kind: chainplan.FAll, Stage: 3, Option: 1},
			op(chainplan.FAll, 4), op(chainplan.FAll, 5), op(chainplan.B, 5), op(chainplan.B, 4), op(chainplan.B, 3),
			op(chainplan.B, 2), op(chainplan.B, 1)}, 700 + 700},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := c.ReplayStateBytes(tt.seq); got != tt.want {
				t.Fatalf("ReplayStateBytes=%d, want %d", got, tt.want)
			}
		})
	}
	// A chain without the field (a profile that did not measure it) keeps none.
	plain := replayChain()
	for i := range plain.Stages {
		plain.Stages[i].ReplayBytes = 0
	}
	if got := plain.ReplayStateBytes(tests[1].seq); got != 0 {
		t.Fatalf("without replay_bytes: ReplayStateBytes=%d, want 0", got)
	}
}

func TestReplayBytesField(t *testing.T) {
	doc := strings.Replace(validChainV2, `"recompute_time": 1.25,`, `"recompute_time": 1.25, "replay_bytes": 5056,`, 1)
	c, err := chainplan.ParseChain([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if c.Stages[0].ReplayBytes != 5056 || c.Stages[1].ReplayBytes != 0 {
		t.Fatalf("replay_bytes read as %d, %d; want 5056, 0", c.Stages[0].ReplayBytes, c.Stages[1].ReplayBytes)
	}
	b, err := c.MarshalIndent()
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), `"replay_bytes"`); n != 1 {
		t.Fatalf("the document writes replay_bytes %d times, want once (stage 1 only):\n%s", n, b)
	}
	if cons := c.Conservative(); cons.Stages[0].ReplayBytes != 0 || c.Stages[0].ReplayBytes != 5056 {
		t.Fatal("Conservative() must drop replay_bytes (a version 2 field) from the copy only")
	}
	// A chain whose only version 2 field is replay_bytes is written as version 2.
	only := replayChain()
	only.Format = chainplan.ChainFormat
	if b, err := only.MarshalIndent(); err != nil {
		t.Fatal(err)
	} else if back, err := chainplan.ParseChain(b); err != nil || back.Stages[1].ReplayBytes != 500 {
		t.Fatalf("round trip of a chain with replay_bytes only: %v\n%s", err, b)
	}
	for _, bad := range []struct{ doc, msg string }{
		{strings.Replace(doc, `5056`, `-1`, 1), `field "replay_bytes": negative value`},
		{strings.Replace(doc, `chainplan.chain/v2`, `chainplan.chain/v1`, 1), `unknown field in a chainplan.chain/v1 chain`},
	} {
		if _, err := chainplan.ParseChain([]byte(bad.doc)); err == nil || !strings.Contains(err.Error(), bad.msg) {
			t.Fatalf("ParseChain: error %v, want one containing %q", err, bad.msg)
		}
	}
}
