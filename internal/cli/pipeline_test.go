package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/pipeline"
)

// pipelineChain is a six-layer chain with weights, times in seconds and sizes in bytes
// small enough to read: the CLI tests plan it on two devices linked at 100 B/s.
const pipelineChain = `{"format": "chainplan.chain/v1", "input_bytes": 10, "stages": [
 {"name": "l1", "fwd_time": 1, "bwd_time": 2, "out_bytes": 10, "saved_bytes": 20, "fwd_tmp_bytes": 0, "bwd_tmp_bytes": 0, "param_bytes": 100},
 {"name": "l2", "fwd_time": 2, "bwd_time": 3, "out_bytes": 20, "saved_bytes": 20, "fwd_tmp_bytes": 0, "bwd_tmp_bytes": 0, "param_bytes": 50},
 {"name": "l3", "fwd_time": 1, "bwd_time": 1, "out_bytes": 10, "saved_bytes": 30, "fwd_tmp_bytes": 0, "bwd_tmp_bytes": 0, "param_bytes": 200},
 {"name": "l4", "fwd_time": 3, "bwd_time": 4, "out_bytes": 5, "saved_bytes": 5, "fwd_tmp_bytes": 0, "bwd_tmp_bytes": 0, "param_bytes": 10},
 {"name": "l5", "fwd_time": 1, "bwd_time": 2, "out_bytes": 10, "saved_bytes": 15, "fwd_tmp_bytes": 0, "bwd_tmp_bytes": 0, "param_bytes": 80},
 {"name": "l6", "fwd_time": 2, "bwd_time": 2, "out_bytes": 4, "saved_bytes": 4, "fwd_tmp_bytes": 0, "bwd_tmp_bytes": 0, "param_bytes": 40}]}`

func writeTemp(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// pipelineArgs are the arguments of a contiguous plan of pipelineChain on two devices.
func pipelineArgs(chain string, extra ...string) []string {
	return append([]string{"pipeline", "--algo", "contiguous", "--chain", chain, "--gpus", "2", "--bandwidth", "100"}, extra...)
}

// checkPipelinePlan parses a plan the CLI printed and validates it against the chain at
// the plan's own options.
func checkPipelinePlan(t *testing.T, chain, out string) *pipeplan.Plan {
	t.Helper()
	p, err := pipeplan.Parse([]byte(out))
	if err != nil {
		t.Fatalf("output is no pipeline plan: %v\n%s", err, out)
	}
	c, err := chainplan.ReadChain(chain)
	if err != nil {
		t.Fatal(err)
	}
	pr, err := pipeline.ProblemOf(c, p)
	if err != nil {
		t.Fatal(err)
	}
	if err := pipeline.Check(pr, p); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPipelineJSON(t *testing.T) {
	chain := writeTemp(t, "chain.json", pipelineChain)
	code, out, errs := run(t, pipelineArgs(chain, "--memory", "10kB", "--activation-model", "input", "--weight-copies", "2")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	p := checkPipelinePlan(t, chain, out)
	if p.Algo != "contiguous" || p.GPUs != 2 || p.MemoryBytes != 10000 || p.Bandwidth != 100 || p.WeightCopies != 2 ||
		p.ActivationModel != pipeplan.ActivationsInput || !p.Contiguous {
		t.Errorf("plan header %+v", p)
	}
	// With ample memory the best split of the loads (3, 5, 2, 7, 3, 4) on two devices is
	// {1..3}, {4..6}: 10 against 14, the boundary's 2·10/100 = 0.2 far below.
	if len(p.Stages) != 2 || p.Stages[0].Last != 3 || p.Period != 14 {
		t.Errorf("stages %+v, period %g; want layers 1-3 and 4-6, period 14", p.Stages, p.Period)
	}
}

func TestPipelineText(t *testing.T) {
	chain := writeTemp(t, "chain.json", pipelineChain)
	code, out, errs := run(t, pipelineArgs(chain, "--memory", "10kB", "--format", "text")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"algorithm   contiguous, 2 stages on 2 devices, contiguous",
		"period      14 s per mini-batch; load bound 14 s",
		"speed-up    1.71x one device (sequential 24 s); 1.00x the best contiguous plan without a memory limit (period 14 s)",
		"memory      counts the operations' temporaries",
		"stages      (times in s)\n", "l1 .. l3", "l4 .. l6",
		"devices     (load in s)\n", "pattern     one period, times in s:",
		"  device 0   F0 0+4 h0", "  link 0-1   CF0 4+0.1 h0",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
}

func TestPipelineMemoryMin(t *testing.T) {
	chain := writeTemp(t, "chain.json", pipelineChain)
	code, out, errs := run(t, pipelineArgs(chain, "--memory", "min")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	p := checkPipelinePlan(t, chain, out)
	// One byte less has no plan, and the refusal names this memory as the smallest.
	less := fmt.Sprint(p.MemoryBytes - 1)
	code, _, errs = run(t, pipelineArgs(chain, "--memory", less)...)
	if code != exitInfeasible {
		t.Fatalf("--memory %s: exit %d, want %d (%s)", less, code, exitInfeasible, errs)
	}
	if want := fmt.Sprintf("the smallest memory per device that fits is %d B", p.MemoryBytes); !strings.Contains(errs, want) {
		t.Errorf("stderr %q, want it to contain %q", errs, want)
	}
}

func TestPipelineBadInput(t *testing.T) {
	chain := writeTemp(t, "chain.json", pipelineChain)
	empty := writeTemp(t, "empty.json", `{"format": "chainplan.chain/v1", "input_bytes": 1, "stages": []}`)
	nan := writeTemp(t, "nan.json", strings.Replace(pipelineChain, `"fwd_time": 3`, `"fwd_time": NaN`, 1))
	negative := writeTemp(t, "negative.json", strings.Replace(pipelineChain, `"param_bytes": 10}`, `"param_bytes": -10}`, 1))
	base := []string{"pipeline", "--algo", "contiguous"}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"ZeroGPUs", []string{"--chain", chain, "--gpus", "0", "--memory", "1GB", "--bandwidth", "1GB/s"}, "--gpus must be at least 1"},
		{"NegativeMemory", []string{"--chain", chain, "--gpus", "2", "--memory", "-5", "--bandwidth", "1GB/s"}, `--memory: byte size "-5": negative`},
		{"NaNMemory", []string{"--chain", chain, "--gpus", "2", "--memory", "NaN", "--bandwidth", "1GB/s"}, `--memory: byte size "NaN"`},
		{"ZeroMemory", []string{"--chain", chain, "--gpus", "2", "--memory", "0", "--bandwidth", "1GB/s"}, "--memory must be positive"},
		{"NaNBandwidth", []string{"--chain", chain, "--gpus", "2", "--memory", "1GB", "--bandwidth", "NaN"}, `--bandwidth "NaN"`},
		{"NoBandwidth", []string{"--chain", chain, "--gpus", "2", "--memory", "1GB"}, "--bandwidth is required"},
		{"NoMemory", []string{"--chain", chain, "--gpus", "2", "--bandwidth", "1GB/s"}, "--memory is required"},
		{"WeightCopies", []string{"--chain", chain, "--gpus", "2", "--memory", "1GB", "--bandwidth", "1GB/s", "--weight-copies", "0"}, "--weight-copies must be at least 1"},
		{"ActivationModel", []string{"--chain", chain, "--gpus", "2", "--memory", "1GB", "--bandwidth", "1GB/s", "--activation-model", "all"}, `--activation-model must be "input" or "saved"`},
		{"Format", []string{"--chain", chain, "--gpus", "2", "--memory", "1GB", "--bandwidth", "1GB/s", "--format", "csv"}, `unknown --format "csv"`},
		{"NoLayers", []string{"--chain", empty, "--gpus", "2", "--memory", "1GB", "--bandwidth", "1GB/s"}, `field "stages": the chain has no stages`},
		{"NaNChain", []string{"--chain", nan, "--gpus", "2", "--memory", "1GB", "--bandwidth", "1GB/s"}, "malformed JSON at line 5"},
		{"NegativeChain", []string{"--chain", negative, "--gpus", "2", "--memory", "1GB", "--bandwidth", "1GB/s"}, `stage 4 ("l4"): field "param_bytes": negative value -10`},
		{"NoChain", []string{"--gpus", "2", "--memory", "1GB", "--bandwidth", "1GB/s"}, "--chain is required"},
		{"BothInputs", []string{"--chain", chain, "--run", "1", "--gpus", "2", "--memory", "1GB", "--bandwidth", "1GB/s"}, "mutually exclusive"},
		{"MissingChain", []string{"--chain", filepath.Join(t.TempDir(), "absent.json"), "--gpus", "2", "--memory", "1GB", "--bandwidth", "1GB/s"}, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := run(t, append(base, tc.args...)...)
			if code != exitBadInput {
				t.Errorf("exit %d, want %d (%s)", code, exitBadInput, errs)
			}
			if !strings.Contains(errs, tc.want) {
				t.Errorf("stderr %q, want it to contain %q", errs, tc.want)
			}
		})
	}
}

// TestPipelineUnknownAlgo: the command reports a name that is no pipeline algorithm in the
// registry's words (planner.SolvePipeline's one check, the same for Python), with what the
// name is when it is another family's algorithm and the spelling when only its case is off.
func TestPipelineUnknownAlgo(t *testing.T) {
	chain := writeTemp(t, "chain.json", pipelineChain)
	for algo, want := range map[string]string{
		"rotor":   `unknown pipeline algorithm "rotor" (want madpipe, contiguous, pipedream): rotor is a checkpointing algorithm`,
		"MadPipe": `unknown pipeline algorithm "MadPipe" (want madpipe, contiguous, pipedream): names are lower-case: did you mean "madpipe"?`,
		"nope":    `unknown pipeline algorithm "nope" (want madpipe, contiguous, pipedream)`,
	} {
		code, _, errs := run(t, "pipeline", "--algo", algo, "--chain", chain, "--gpus", "2", "--memory", "1GB", "--bandwidth", "1GB/s")
		if code != exitBadInput || !strings.Contains(errs, want) {
			t.Errorf("--algo %s: exit %d, stderr %q; want 2 and %q", algo, code, errs, want)
		}
	}
}

// TestPipelineRun plans a stored run: the plan printed is the one recorded, and the same
// as planning the exported chain.
func TestPipelineRun(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	mustIngest(t, db, testdataFile("resnet_file.arrow"))
	args := []string{"pipeline", "--run", "latest", "--algo", "pipedream", "--gpus", "2", "--memory", "min", "--bandwidth", "1GB/s"}
	code, out, errs := runDB(t, db, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(errs, "recorded as plan 1 of run 1") {
		t.Fatalf("stderr %q does not name the recorded plan", errs)
	}
	_, chainJSON, _ := runDB(t, db, "export", "1")
	chainFile := writeTemp(t, "c.json", chainJSON)
	p := checkPipelinePlan(t, chainFile, out)
	code, fromChain, errs := run(t, "pipeline", "--chain", chainFile, "--algo", "pipedream", "--gpus", "2", "--memory", "min", "--bandwidth", "1GB/s")
	q, err := pipeplan.Parse([]byte(fromChain))
	if code != 0 || err != nil {
		t.Fatalf("pipeline --chain: exit %d %v %s", code, err, errs)
	}
	if q.Period != p.Period || q.MemoryBytes != p.MemoryBytes || len(q.Stages) != len(p.Stages) {
		t.Errorf("--run plan (period %g, memory %d) differs from the exported chain's (%g, %d)", p.Period, p.MemoryBytes, q.Period, q.MemoryBytes)
	}
	code, rows, _ := runDB(t, db, "sql", "--format", "csv", "SELECT algo, budget_bytes, makespan_s = json_extract(plan_json, '$.period'), "+
		"json_extract(params_json, '$.memory'), json_extract(params_json, '$.gpus'), json_extract(plan_json, '$.format') FROM plans")
	want := fmt.Sprintf("pipedream,%d,1,min,2,chainplan.pipeline/v1", p.MemoryBytes)
	if code != 0 || !strings.Contains(rows, want) {
		t.Errorf("recorded rows:\n%s\nwant %s", rows, want)
	}
	// show-plan and simulate --plan-id read the stored pipeline plan.
	code, shown, errs := runDB(t, db, "show-plan", "1", "--format", "json")
	if code != 0 || checkPipelinePlan(t, chainFile, shown).Period != p.Period {
		t.Errorf("show-plan 1 --format json: exit %d %s\n%s", code, errs, shown)
	}
	code, shown, errs = runDB(t, db, "show-plan", "1")
	if code != 0 || !strings.Contains(shown, "algorithm   pipedream, 2 stages on 2 devices") {
		t.Errorf("show-plan 1: exit %d %s\n%s", code, errs, shown)
	}
	code, shown, errs = runDB(t, db, "simulate", "--plan-id", "1")
	if code != 0 || !strings.Contains(shown, "plan        plan 1: valid, pipedream on 2 devices") {
		t.Errorf("simulate --plan-id 1: exit %d %s\n%s", code, errs, shown)
	}
	// A refused request records nothing.
	code, _, _ = runDB(t, db, "pipeline", "--run", "1", "--algo", "pipedream", "--gpus", "2", "--memory", "1", "--bandwidth", "1GB/s")
	if code != exitInfeasible {
		t.Errorf("--memory 1: exit %d, want %d", code, exitInfeasible)
	}
	if _, n, _ := runDB(t, db, "sql", "--format", "csv", "SELECT count(*) FROM plans"); !strings.HasSuffix(strings.TrimSpace(n), "\n1") {
		t.Errorf("plans after a refusal: %q, want 1", n)
	}
}

// TestPipelineMadPipe checks that madpipe's plan validates and says which plan it is, and
// that it is never worse than the contiguous one (with or without a MILP solver).
func TestPipelineMadPipe(t *testing.T) {
	chain := writeTemp(t, "chain.json", pipelineChain)
	args := []string{"pipeline", "--chain", chain, "--gpus", "3", "--memory", "2kB", "--bandwidth", "100", "--time-limit", "5s"}
	code, out, errs := run(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	p := checkPipelinePlan(t, chain, out)
	if p.Algo != "madpipe" || (p.Chosen != "madpipe" && p.Chosen != "contiguous") {
		t.Errorf("algo %q chosen %q", p.Algo, p.Chosen)
	}
	code, out, errs = run(t, append(args, "--algo", "contiguous")...)
	if code != 0 {
		t.Fatalf("contiguous: exit %d: %s", code, errs)
	}
	if c := checkPipelinePlan(t, chain, out); p.Period > c.Period*(1+1e-9) {
		t.Errorf("madpipe period %g above the contiguous %g", p.Period, c.Period)
	}
	// madpipe's smallest memory is never above the contiguous one, and its plan there
	// validates at that memory.
	minArgs := []string{"pipeline", "--chain", chain, "--gpus", "3", "--memory", "min", "--bandwidth", "100", "--time-limit", "5s"}
	code, out, errs = run(t, minArgs...)
	if code != 0 {
		t.Fatalf("--memory min: exit %d: %s", code, errs)
	}
	m := checkPipelinePlan(t, chain, out)
	code, out, errs = run(t, append(minArgs, "--algo", "contiguous")...)
	if code != 0 {
		t.Fatalf("contiguous --memory min: exit %d: %s", code, errs)
	}
	if cm := checkPipelinePlan(t, chain, out); m.MemoryBytes > cm.MemoryBytes {
		t.Errorf("madpipe's smallest memory %d above the contiguous %d", m.MemoryBytes, cm.MemoryBytes)
	}
}
