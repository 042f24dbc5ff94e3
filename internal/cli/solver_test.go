package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/milp"
)

// vgg16Madpipe plans the shipped vgg16 chain on two devices of 28 GB at 12 GB/s, where
// MadPipe's own schedule (period 0.3407) beats the best contiguous plan (0.3761), the
// memory counting the operations' temporaries (docs/pipeline.md, "What a device holds").
var vgg16Madpipe = []string{"pipeline", "--chain", "../../examples/vgg16.json", "--gpus", "2", "--memory", "28GB", "--bandwidth", "12GB/s"}

func parsePlan(t *testing.T, out string) *pipeplan.Plan {
	t.Helper()
	p, err := pipeplan.Parse([]byte(out))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return p
}

// TestMissingSolverIsSeen: without a MILP solver madpipe's fallback is seen (a warning on
// standard error, "fallback" in the plan and in the text), and --require-solver refuses it
// with exit status 2 and the install hint.
func TestMissingSolverIsSeen(t *testing.T) {
	code, out, errs := run(t, vgg16Madpipe...)
	if code != 0 {
		t.Fatalf("with the solver: exit %d: %s", code, errs)
	}
	own := parsePlan(t, out)
	if own.Chosen != "madpipe" || own.Fallback != "" || strings.Contains(errs, "warning") {
		t.Fatalf("with the solver: chosen %q, fallback %q, stderr %q; want MadPipe's plan", own.Chosen, own.Fallback, errs)
	}

	t.Setenv(milp.EnvHighs, "/nonexistent/highs")
	code, out, errs = run(t, vgg16Madpipe...)
	if code != 0 {
		t.Fatalf("without a solver: exit %d: %s", code, errs)
	}
	p := parsePlan(t, out)
	if p.Fallback != pipeplan.FallbackNoSolver || p.Chosen != "contiguous" || p.Period <= own.Period {
		t.Fatalf("without a solver: chosen %q fallback %q period %g; want the contiguous fallback, slower than %g", p.Chosen, p.Fallback, p.Period, own.Period)
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(out), &raw); err != nil || raw["fallback"] != "no-milp-solver" {
		t.Fatalf("the document's fallback field: %v (%v)", raw["fallback"], err)
	}
	if !strings.Contains(errs, "chainplan: warning: no MILP solver was found") || !strings.Contains(errs, "--require-solver") {
		t.Fatalf("stderr %q, want the fallback warning", errs)
	}
	if _, text, _ := run(t, append(vgg16Madpipe, "--format", "text")...); !strings.Contains(text, "fallback    no-milp-solver") {
		t.Fatalf("the text format does not say fallback:\n%s", text)
	}

	for _, memory := range []string{"28GB", "min"} {
		args := append(append([]string{}, vgg16Madpipe...), "--require-solver", "--memory", memory)
		code, out, errs = run(t, args...)
		if code != exitBadInput || out != "" || !strings.Contains(errs, "refuses the contiguous fallback") || !strings.Contains(errs, "pip install highsbox") {
			t.Fatalf("--require-solver --memory %s without a solver: exit %d, stdout %q, stderr %q; want exit 2 naming the missing solver", memory, code, out, errs)
		}
	}
	// The algorithms that run no solver ignore the option.
	if code, _, errs := run(t, append(append([]string{}, vgg16Madpipe...), "--algo", "contiguous", "--require-solver")...); code != 0 {
		t.Fatalf("contiguous --require-solver: exit %d: %s", code, errs)
	}
}
