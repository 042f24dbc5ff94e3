package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chainplan/chainplan/internal/service"
	"github.com/chainplan/chainplan/store"
)

// pipesimDoc is what the tests read of pipesim's JSON.
type pipesimDoc struct {
	Format            string  `json:"format"`
	Schedule          string  `json:"schedule"`
	Makespan          float64 `json:"makespan"`
	Period            float64 `json:"period"`
	MicrobatchPeriod  float64 `json:"microbatch_period"`
	PlanPeriod        float64 `json:"plan_period"`
	VersionDifference int     `json:"version_difference"`
	PerStage          []struct {
		PeakInflight int  `json:"peak_inflight"`
		Checkpointed bool `json:"checkpointed"`
	} `json:"per_stage"`
	PerDevice []struct {
		PeakBytes int64 `json:"peak_bytes"`
	} `json:"per_device"`
	SimulationID int64                    `json:"simulation_id"`
	Comparisons  []service.RankComparison `json:"comparisons"`
	Warnings     []string                 `json:"warnings"`
}

func readPipesim(t *testing.T, out string) pipesimDoc {
	t.Helper()
	var d pipesimDoc
	if err := json.Unmarshal([]byte(out), &d); err != nil || d.Format != "chainplan.pipesim/v1" {
		t.Fatalf("not a pipesim document (%v):\n%s", err, out)
	}
	return d
}

// TestPipesim runs the schedules of a chain file: JSON and text, a trace and a picture,
// TiMePReSt in unit time, and a plan replayed by periodic at its period.
func TestPipesim(t *testing.T) {
	chain := writeTemp(t, "chain.json", pipelineChain)
	dir := t.TempDir()
	trace, svg := filepath.Join(dir, "trace.json"), filepath.Join(dir, "gantt.svg")
	code, out, errs := run(t, "pipesim", "--chain", chain, "--stages", "1-2,3-4,5-6", "--schedule", "1f1b-flush",
		"--microbatches", "4", "--bandwidth", "100", "--checkpoint", "1", "--trace", trace, "--plot", svg)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	d := readPipesim(t, out)
	if d.Schedule != "1f1b-flush" || len(d.PerStage) != 3 || d.PerStage[0].PeakInflight != 3 || !d.PerStage[1].Checkpointed {
		t.Fatalf("1f1b-flush on three stages: %+v", d)
	}
	for _, f := range []string{trace, svg} {
		if b, err := os.ReadFile(f); err != nil || len(b) < 200 || !strings.Contains(errs, "wrote "+f) {
			t.Fatalf("%s: %d bytes, %v; stderr %s", f, len(b), err, errs)
		}
	}
	code, out, errs = run(t, "pipesim", "--chain", chain, "--stages", "4", "--schedule", "timeprest", "--microbatches", "2",
		"--minibatches", "12", "--unit-time", "--format", "text")
	if code != 0 || !strings.Contains(out, "v = 2 in the steady state") || !strings.Contains(out, "2 sequences of updates") ||
		!strings.Contains(out, "multiple-sequence problem") || !strings.Contains(out, "unit time") {
		t.Fatalf("timeprest W=4 N=2: exit %d\n%s%s", code, out, errs)
	}
	plan := writeTemp(t, "plan.json", must(runOut(t, pipelineArgs(chain, "--memory", "1MB")...)))
	code, out, errs = run(t, "pipesim", "--chain", chain, "--plan", plan, "--schedule", "periodic", "--microbatches", "1", "--minibatches", "40")
	if code != 0 {
		t.Fatalf("periodic: exit %d: %s", code, errs)
	}
	if d := readPipesim(t, out); d.PlanPeriod <= 0 || d.MicrobatchPeriod/d.PlanPeriod-1 > 1e-9 || 1-d.MicrobatchPeriod/d.PlanPeriod > 1e-9 {
		t.Fatalf("periodic at %v per micro-batch, the plan's period %v", d.MicrobatchPeriod, d.PlanPeriod)
	}
}

// runOut runs the CLI and returns its output when it succeeds.
func runOut(t *testing.T, args ...string) (string, error) {
	t.Helper()
	code, out, errs := run(t, args...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, errs)
	}
	return out, nil
}

// TestPipesimBadInput: stage specifications that do not cover the chain, no micro-batch, an
// unknown schedule and contradictory flags exit with status 2 and a message naming them.
func TestPipesimBadInput(t *testing.T) {
	chain := writeTemp(t, "chain.json", pipelineChain)
	base := []string{"pipesim", "--chain", chain, "--microbatches", "2"}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--stages", "1-2,3-5", "--schedule", "gpipe"}, "the ranges end at layer 5, the chain has 6 layers"},
		{[]string{"--stages", "1-2,4-6", "--schedule", "gpipe"}, "starts at layer 4, want 3"},
		{[]string{"--stages", "7", "--schedule", "gpipe"}, "7 stages: want 1..6"},
		{[]string{"--stages", "2", "--schedule", "gpipe", "--microbatches", "0"}, "--microbatches must be at least 1"},
		{[]string{"--stages", "2", "--schedule", "pipedream"}, `unknown schedule "pipedream"`},
		{[]string{"--stages", "2"}, "--schedule is required"},
		{[]string{"--schedule", "gpipe"}, "exactly one of --stages, --plan and --plan-id"},
		{[]string{"--stages", "2", "--schedule", "periodic"}, "periodic replays a chainplan.pipeline/v1 plan"},
		{[]string{"--stages", "2", "--schedule", "gpipe", "--max-inflight", "2"}, "timeprest only"},
		{[]string{"--stages", "2", "--schedule", "gpipe", "--checkpoint", "x"}, "not a stage index"},
		{[]string{"--stages", "2", "--schedule", "gpipe", "--checkpoint", "2"}, "stage 2 is not in 0..1"},
		{[]string{"--stages", "2", "--schedule", "gpipe", "--alpha", "1ms"}, "needs the link model"},
		{[]string{"--stages", "2", "--schedule", "gpipe", "--bandwidth", "fast"}, "bandwidth"},
		{[]string{"--stages", "2", "--schedule", "2bw", "--stages", "6"}, "2bw needs N ≥ S−1 = 5"},
		{[]string{"--stages", "2", "--schedule", "gpipe", "--plot", "x.pdf"}, ".pdf"},
		{[]string{"--stages", "2", "--schedule", "gpipe", "--format", "xml"}, "unknown --format"},
	}
	for _, tt := range tests {
		code, _, errs := run(t, append(base, tt.args...)...)
		if code != 2 || !strings.Contains(errs, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tt.args, code, errs, tt.want)
		}
	}
}

// TestPipesimRun records simulations of a stored run and prints, for a stored plan whose
// executions the runner recorded, each rank's measurement beside the simulated step.
func TestPipesimRun(t *testing.T) {
	db := filepath.Join(t.TempDir(), "chainplan.db")
	mustIngest(t, db, testdataFile("resnet_file.arrow"))
	code, out, errs := runDB(t, db, "pipesim", "--run", "latest", "--stages", "2", "--schedule", "pipedream-async", "--microbatches", "2")
	if code != 0 || readPipesim(t, out).SimulationID != 1 || !strings.Contains(errs, "recorded as simulation 1 of run 1") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs = runDB(t, db, "pipeline", "--run", "latest", "--algo", "contiguous", "--gpus", "2", "--memory", "1GB",
		"--bandwidth", "1GB/s", "--weight-copies", "2"); code != 0 {
		t.Fatalf("pipeline: exit %d: %s", code, errs)
	}
	st, err := store.Open(t.Context(), db, store.Options{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	for rank := range 2 {
		if _, err := st.RecordExecution(t.Context(), &store.Execution{PlanID: 1, Steps: 3, StepTimeS: 0.002, PeakBytes: 5000,
			Device: "cpu", Metadata: map[string]string{"kind": "pipeline", "rank": string(rune('0' + rank)), "world_size": "2",
				"schedule": "plan", "microbatches": "6", "rank_step_time_s": "0.02", "microbatch_time_s": "0.0021"}}); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	code, out, errs = runDB(t, db, "pipesim", "--plan-id", "1", "--schedule", "periodic", "--microbatches", "6", "--flush", "--format", "text")
	if code != 0 || !strings.Contains(out, "measured by the pipeline runner") ||
		!strings.Contains(errs, "recorded as simulation 2 of run 1") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	lines := strings.Split(strings.TrimSpace(out[strings.Index(out, "measured by"):]), "\n")
	if len(lines) != 4 || !strings.Contains(lines[2], "plan") || !strings.Contains(lines[3], "5000") {
		t.Fatalf("want a header and one line per rank:\n%s", strings.Join(lines, "\n"))
	}
	code, out, _ = runDB(t, db, "sql", "--format", "csv", "SELECT schedule, count(*) FROM simulation_summary GROUP BY schedule ORDER BY schedule")
	if code != 0 || !strings.Contains(out, "periodic,1") || !strings.Contains(out, "pipedream-async,1") {
		t.Fatalf("simulations in SQL: exit %d\n%s", code, out)
	}
	if code, _, errs = runDB(t, db, "pipesim", "--run", "1", "--plan-id", "9", "--schedule", "periodic", "--microbatches", "2"); code != 2 || !strings.Contains(errs, "no plan 9") {
		t.Fatalf("plan 9: exit %d: %s", code, errs)
	}
}

// TestPipesimTextSaysWhereThePeriodComesFrom: the text says whether the period is a steady
// state's or a mean that --minibatches changes, every time with its unit.
func TestPipesimTextSaysWhereThePeriodComesFrom(t *testing.T) {
	chain := writeTemp(t, "chain.json", pipelineChain)
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"--schedule", "1f1b-flush", "--minibatches", "4"}, []string{"period       ", " s per mini-batch, ",
			"             the steady state, measured over mini-batches 2..4\n", "stages       (busy in s)\n"}},
		{[]string{"--schedule", "pipedream-async", "--minibatches", "2"}, []string{
			"             not a steady state: the mean over mini-batches 1..2, which changes with --minibatches (see the warnings)\n",
			"warning      no steady state seen within 2 mini-batches"}},
	} {
		code, out, errs := run(t, append([]string{"pipesim", "--chain", chain, "--stages", "4", "--microbatches", "2",
			"--format", "text"}, tt.args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", tt.args, code, errs)
		}
		for _, w := range tt.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v: the text lacks %q:\n%s", tt.args, w, out)
			}
		}
	}
}
