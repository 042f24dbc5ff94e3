package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
)

// run executes the CLI in-process and returns its exit status, stdout and stderr.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// exampleA is the small heterogeneous test vector of rotor spec §4.7.
const exampleA = `{"format": "chainplan.chain/v1", "input_bytes": 2, "stages": [
 {"name": "s1", "fwd_time": 2, "bwd_time": 3, "out_bytes": 4, "saved_bytes": 6, "fwd_tmp_bytes": 1, "bwd_tmp_bytes": 1},
 {"name": "s2", "fwd_time": 3, "bwd_time": 4, "out_bytes": 3, "saved_bytes": 8, "fwd_tmp_bytes": 0, "bwd_tmp_bytes": 1},
 {"name": "s3", "fwd_time": 1, "bwd_time": 2, "out_bytes": 5, "saved_bytes": 7, "fwd_tmp_bytes": 2, "bwd_tmp_bytes": 0}],
 "loss": {"fwd_time": 0, "bwd_time": 1, "fwd_tmp_bytes": 0, "bwd_tmp_bytes": 1}}`

// writeChain writes Example A to a temporary chain file.
func writeChain(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "chain.json")
	if err := os.WriteFile(path, []byte(exampleA), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestSolveJSON(t *testing.T) {
	chain := writeChain(t)
	code, out, errs := run(t, "solve", "--chain", chain, "--budget", "24", "--slots", "24")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var p chainplan.Plan
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("output is not a plan: %v\n%s", err, out)
	}
	// rotor spec §4.7: makespan 21 at a budget of 24.
	if p.Algo != "rotor" || !p.Feasible || p.Makespan != 21 || p.PeakBytes != 24 || p.BudgetBytes != 24 || p.Slots != 24 {
		t.Fatalf("plan %+v", p)
	}
	if got, want := chainplan.FormatSequence(p.Sequence), "F_ck 1, F_ck 2, F_all 3, F_all 4, B 4, B 3, F_all 2, B 2, F_all 1, B 1"; got != want {
		t.Fatalf("sequence %s, want %s", got, want)
	}
}

// TestSolveBudgetSpellings checks that every spelling of one size gives the same plan
// (docs/CLI.md, "Sizes and bandwidths"): scientific notation and SI units included.
func TestSolveBudgetSpellings(t *testing.T) {
	chain := writeChain(t)
	for _, budget := range []string{"24", "2.4e1", "0.024kB", "0.024 k", "24B"} {
		code, out, errs := run(t, "solve", "--chain", chain, "--budget", budget, "--slots", "24")
		var p chainplan.Plan
		if code != 0 || json.Unmarshal([]byte(out), &p) != nil || p.BudgetBytes != 24 || p.Makespan != 21 {
			t.Errorf("--budget %s: exit %d, plan %+v, stderr %s", budget, code, p, errs)
		}
	}
}

func TestSolveAlgorithms(t *testing.T) {
	chain := writeChain(t)
	for _, algo := range []string{"rotor", "optimal", "revolve", "sequential", "store-all"} {
		code, out, errs := run(t, "solve", "--algo", algo, "--chain", chain, "--budget", "40", "--format", "text")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", algo, code, errs)
		}
		// At a budget of 40 nothing needs recomputing, except that revolve by definition
		// runs F_all only right before its backward (rotor spec §4.2).
		want := "makespan    16 "
		if algo == "revolve" {
			want = "makespan    22 "
		}
		if !strings.Contains(out, "algorithm   "+algo) || !strings.Contains(out, want) {
			t.Fatalf("%s: unexpected output:\n%s", algo, out)
		}
	}
	code, out, _ := run(t, "solve", "--algo", "sequential", "--segments", "2", "--chain", chain, "--budget", "40")
	if code != 0 || !strings.Contains(out, `"segments": 2`) {
		t.Fatalf("sequential --segments 2: exit %d\n%s", code, out)
	}
}

func TestSolveInfeasible(t *testing.T) {
	chain := writeChain(t)
	code, _, errs := run(t, "solve", "--chain", chain, "--budget", "21", "--slots", "21")
	if code != exitInfeasible {
		t.Fatalf("exit %d, want %d: %s", code, exitInfeasible, errs)
	}
	if !strings.Contains(errs, "smallest feasible budget at 21 slots is 22 B") {
		t.Fatalf("message does not state the smallest budget: %s", errs)
	}
	code, out, errs := run(t, "solve", "--chain", chain, "--budget", "min", "--slots", "21")
	if code != 0 || !strings.Contains(out, `"budget_bytes": 22`) {
		t.Fatalf("--budget min: exit %d %s %s", code, out, errs)
	}
}

func TestBadInput(t *testing.T) {
	chain := writeChain(t)
	bad := filepath.Join(t.TempDir(), "bad.json")
	doc := strings.Replace(string(must(os.ReadFile(chain))), `"saved_bytes": 8`, `"saved_bytes": -8`, 1)
	if err := os.WriteFile(bad, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		msg  string
	}{
		{"NegativeField", []string{"solve", "--chain", bad, "--budget", "40"}, `stage 2 ("s2"): field "saved_bytes": negative value -8`},
		{"MissingFile", []string{"solve", "--chain", "/nonexistent.json", "--budget", "40"}, "no such file"},
		{"UnknownAlgo", []string{"solve", "--algo", "magic", "--chain", chain, "--budget", "40"}, `unknown algorithm "magic"`},
		{"BadBudget", []string{"solve", "--chain", chain, "--budget", "lots"}, `byte size "lots"`},
		{"FractionalBudget", []string{"solve", "--chain", chain, "--budget", "1.5"}, `--budget: byte size "1.5": not a whole number of bytes`},
		{"BudgetUnit", []string{"solve", "--chain", chain, "--budget", "2XB"}, `unknown unit "XB"`},
		{"NaNBudget", []string{"solve", "--chain", chain, "--budget", "NaN"}, `byte size "NaN": not a number`},
		{"NoBudget", []string{"solve", "--chain", chain}, "--budget is required"},
		{"UnknownFlag", []string{"solve", "--chian", chain}, "unknown flag: --chian"},
		{"UnknownCommand", []string{"solv"}, `unknown command "solv"`},
		{"BadFormat", []string{"solve", "--chain", chain, "--budget", "40", "--format", "xml"}, `unknown --format "xml"`},
		{"SegmentsWithRotor", []string{"solve", "--chain", chain, "--budget", "40", "--segments", "2"}, "segments apply to the sequential"},
		{"TooManySegments", []string{"solve", "--algo", "sequential", "--chain", chain, "--budget", "40", "--segments", "9"}, "9 segments for a chain of 3 stages"},
		{"BadSlots", []string{"solve", "--chain", chain, "--budget", "40", "--slots", "0"}, "--slots must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errs := run(t, tt.args...)
			if code != exitBadInput {
				t.Fatalf("exit %d, want %d: %s", code, exitBadInput, errs)
			}
			if !strings.Contains(errs, tt.msg) {
				t.Fatalf("stderr %q does not contain %q", errs, tt.msg)
			}
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestSimulate(t *testing.T) {
	chain := writeChain(t)
	code, out, _ := run(t, "solve", "--chain", chain, "--budget", "24", "--slots", "24")
	if code != 0 {
		t.Fatal(out)
	}
	plan := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(plan, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "simulate", "--chain", chain, "--plan", plan)
	if code != 0 || !strings.Contains(out, "valid, 10 operations") || !strings.Contains(out, "peak        24 B") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	code, out, _ = run(t, "simulate", "--chain", chain, "--plan", plan, "--budget", "23", "--format", "json")
	var sim simulation
	if err := json.Unmarshal([]byte(out), &sim); err != nil {
		t.Fatal(err)
	}
	if code != exitBadInput || sim.Valid || len(sim.Issues) != 1 || !strings.Contains(sim.Issues[0].Msg, "over the limit of 23 B") {
		t.Fatalf("exit %d, %+v", code, sim)
	}
	// A sequence with a missing backward and a missing input is reported in full.
	broken := `{"sequence": [{"op": "F_none", "stage": 1}, {"op": "F_all", "stage": 1}, {"op": "F_all", "stage": 4}, {"op": "B", "stage": 4}]}`
	if err := os.WriteFile(plan, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ = run(t, "simulate", "--chain", chain, "--plan", plan)
	for _, want := range []string{"input a_0 is not in memory", "input a_3 is not in memory", "ends before the backward of stage 3"} {
		if code != exitBadInput || !strings.Contains(out, want) {
			t.Fatalf("exit %d, output lacks %q:\n%s", code, want, out)
		}
	}
}

func TestFrontier(t *testing.T) {
	chain := writeChain(t)
	code, out, errs := run(t, "frontier", "--chain", chain, "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var f struct {
		Points []struct {
			BudgetBytes int64   `json:"budget_bytes"`
			Makespan    float64 `json:"makespan"`
		} `json:"points"`
	}
	if err := json.Unmarshal([]byte(out), &f); err != nil {
		t.Fatal(err)
	}
	// rotor spec §4.7: 23 from 22, 21 from 24, 19 from 26, 18 from 29, 16 from 31.
	want := [][2]float64{{22, 23}, {24, 21}, {26, 19}, {29, 18}, {31, 16}}
	if len(f.Points) != len(want) {
		t.Fatalf("points %+v, want %v", f.Points, want)
	}
	for i, w := range want {
		if float64(f.Points[i].BudgetBytes) != w[0] || f.Points[i].Makespan != w[1] {
			t.Fatalf("point %d %+v, want %v", i, f.Points[i], w)
		}
	}
	code, out, _ = run(t, "frontier", "--chain", chain)
	// Times with their unit: the chain's seconds.
	if code != 0 || !strings.Contains(out, "rotor frontier: 5 points") || !strings.Contains(out, "no-recomputation time 16 s,") ||
		!strings.Contains(out, "22 B            23 s     43.75%") {
		t.Fatalf("table output: exit %d\n%s", code, out)
	}
}

// TestFrontierDefaultAlgo: without --algo, frontier shows the trade-off of the algorithm
// solve would plan the input with: rotor-ops for stages with operation-level options.
func TestFrontierDefaultAlgo(t *testing.T) {
	ops := strings.Replace(strings.Replace(exampleA, "chain/v1", "chain/v2", 1), `"fwd_tmp_bytes": 1, "bwd_tmp_bytes": 1},`,
		`"fwd_tmp_bytes": 1, "bwd_tmp_bytes": 1, "recompute_time": 2, "recompute_tmp_bytes": 1,
		 "options": [{"saved_bytes": 3, "fwd_tmp_bytes": 1, "recompute_time": 1, "keep": [0]}]},`, 1)
	path := filepath.Join(t.TempDir(), "ops.json")
	if err := os.WriteFile(path, []byte(ops), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "frontier", "--chain", path)
	if code != 0 || !strings.HasPrefix(out, "rotor-ops frontier:") {
		t.Fatalf("exit %d, want a rotor-ops frontier:\n%s%s", code, out, errs)
	}
	code, out, _ = run(t, "frontier", "--chain", writeChain(t))
	if code != 0 || !strings.HasPrefix(out, "rotor frontier:") {
		t.Fatalf("exit %d, want a rotor frontier:\n%s", code, out)
	}
}
