package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
)

// optionsChain is a chainplan.chain/v2 chain whose middle stage has operation-level
// options: the input for which rotor-ops, not rotor, is the default.
const optionsChain = `{"format": "chainplan.chain/v2", "input_bytes": 4,
 "stages": [
  {"name": "a", "fwd_time": 1, "bwd_time": 2, "out_bytes": 4, "saved_bytes": 8, "fwd_tmp_bytes": 0, "bwd_tmp_bytes": 0},
  {"name": "b", "fwd_time": 1, "bwd_time": 2, "out_bytes": 4, "saved_bytes": 12, "fwd_tmp_bytes": 0, "bwd_tmp_bytes": 0,
   "options": [{"saved_bytes": 6, "fwd_tmp_bytes": 2, "recompute_time": 0.5, "keep": []}]},
  {"name": "c", "fwd_time": 1, "bwd_time": 2, "out_bytes": 4, "saved_bytes": 8, "fwd_tmp_bytes": 0, "bwd_tmp_bytes": 0},
  {"name": "loss", "fwd_time": 1, "bwd_time": 1, "out_bytes": 0, "saved_bytes": 0, "fwd_tmp_bytes": 0, "bwd_tmp_bytes": 0}]}`

// TestSolveDefaultAlgo: without --algo, solve plans with the input's default, the rule
// Python's chainplan.plan follows (planner.DefaultAlgo, DefaultMultichainAlgo): rotor for a
// chain without options, rotor-ops for one with, multichain for towers; the plan names it.
func TestSolveDefaultAlgo(t *testing.T) {
	chain := writeTemp(t, "options.json", optionsChain)
	c, err := chainplan.ReadChain(chain)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"an example chain", []string{"--chain", filepath.Join("..", "..", "examples", "resnet50.json"), "--budget", "min"}, "rotor"},
		{"a chain with options", []string{"--chain", chain, "--budget", "min"}, "rotor-ops"},
		{"two towers and a loss", append([]string{"--budget", "70"}, towerFiles(t)...), "multichain"},
		{"a bundle", []string{"--chain", writeBundle(t), "--budget", "70"}, "multichain"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := run(t, append([]string{"solve"}, tt.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			p, err := chainplan.ParsePlan([]byte(out))
			if err != nil || p.Algo != tt.want {
				t.Fatalf("plan %.200s (%v): want algo %q", out, err, tt.want)
			}
		})
	}
	// The planner's choice is the default's: naming rotor-ops gives the same plan.
	_, named, _ := run(t, "solve", "--algo", "rotor-ops", "--chain", chain, "--budget", "min", "--format", "text")
	_, chosen, _ := run(t, "solve", "--chain", chain, "--budget", "min", "--format", "text")
	if !strings.HasPrefix(chosen, "algorithm   rotor-ops\n") || dropSolveTime(named) != dropSolveTime(chosen) {
		t.Fatalf("default on %d stages:\n%s\nwant as --algo rotor-ops:\n%s", c.Len(), chosen, named)
	}
	if code, _, errs := run(t, "solve", "--chain", chain, "--budget", "1GiB", "--bandwidth", "12GB/s"); code != 2 ||
		!strings.Contains(errs, "--bandwidth applies to the offloading algorithms only: name one with --algo") {
		t.Fatalf("--bandwidth without --algo: exit %d %s", code, errs)
	}
}

// dropSolveTime removes the line that differs between two runs of the same plan.
func dropSolveTime(text string) string {
	var keep []string
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "solve time") {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "\n")
}
