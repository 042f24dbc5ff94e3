package cli

import (
	"fmt"
	"strings"
	"testing"
)

// TestPipelineFaster: --memory faster plans at the smallest memory where the plan is
// faster than one device, and one byte less has no such plan.
func TestPipelineFaster(t *testing.T) {
	chain := writeTemp(t, "chain.json", pipelineChain)
	code, out, errs := run(t, pipelineArgs(chain, "--memory", "faster")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	p := checkPipelinePlan(t, chain, out)
	if p.Speedup() <= 1 || p.SequentialTime != 24 {
		t.Fatalf("speed-up %.3g (sequential %g, period %g), want above 1", p.Speedup(), p.SequentialTime, p.Period)
	}
	code, out, _ = run(t, pipelineArgs(chain, "--memory", fmt.Sprint(p.MemoryBytes-1))...)
	if code == 0 {
		if q := checkPipelinePlan(t, chain, out); q.Speedup() > 1 {
			t.Fatalf("one byte below %d: speed-up %.3g, still faster than one device", p.MemoryBytes, q.Speedup())
		}
	}
	// At the smallest memory the plan is slower than one device: the trade the text shows.
	code, out, errs = run(t, pipelineArgs(chain, "--memory", "min", "--format", "text")...)
	if code != 0 || !strings.Contains(out, "x one device") || !strings.Contains(out, "without a memory limit") {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
}

// TestPipelineModelOptions: the defaults (two weight copies, temporaries counted, no
// headroom), a headroom that the plan keeps, the paper's model without temporaries, and
// checkpointing, which never needs more memory.
func TestPipelineModelOptions(t *testing.T) {
	chain := writeTemp(t, "chain.json", pipelineChain)
	plan := func(extra ...string) (int64, bool) {
		t.Helper()
		code, out, errs := run(t, pipelineArgs(chain, extra...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", extra, code, errs)
		}
		p := checkPipelinePlan(t, chain, out)
		var peak int64
		for _, m := range p.MemoryPerGPU {
			peak = max(peak, m)
		}
		recomputes := false
		for _, s := range p.Stages {
			recomputes = recomputes || s.Recompute != nil
		}
		if len(extra) == 2 && (p.WeightCopies != 2 || !p.Temporaries || p.Headroom != 0 || p.Checkpoint) {
			t.Errorf("defaults: %d copies, temporaries %v, headroom %v, checkpoint %v", p.WeightCopies, p.Temporaries, p.Headroom, p.Checkpoint)
		}
		return peak, recomputes
	}
	if peak, _ := plan("--memory", "4000", "--headroom", "0.5"); peak > 2000 {
		t.Errorf("headroom 0.5 of 4000 B: a device peaks at %d B", peak)
	}
	withTmp, _ := plan("--memory", "min")
	without, _ := plan("--memory", "min", "--no-temporaries")
	if without >= withTmp {
		t.Errorf("without temporaries %d B, with %d B: the temporaries count nothing", without, withTmp)
	}
	ck, recomputes := plan("--memory", "min", "--checkpoint")
	if ck > withTmp || !recomputes {
		t.Errorf("checkpointing: smallest memory %d B (recomputes: %v), without %d B", ck, recomputes, withTmp)
	}
	for _, bad := range [][]string{{"--memory", "1000", "--headroom", "1"}, {"--memory", "1000", "--headroom", "-0.1"},
		{"--memory", "1000", "--replan"}} {
		if code, _, errs := run(t, pipelineArgs(chain, bad...)...); code != 2 || !strings.Contains(errs, strings.TrimPrefix(bad[2], "--")) {
			t.Errorf("%v: exit %d, %s", bad, code, errs)
		}
	}
}
