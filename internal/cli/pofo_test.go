package cli

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
)

// pofoExample is the worked example of pofo spec §5.8 (L = 4 plus the loss).
const pofoExample = `{"format": "chainplan.chain/v1", "input_bytes": 2, "stages": [
 {"fwd_time": 1, "bwd_time": 2, "out_bytes": 4, "saved_bytes": 6, "fwd_tmp_bytes": 1, "bwd_tmp_bytes": 1},
 {"fwd_time": 2, "bwd_time": 4, "out_bytes": 2, "saved_bytes": 3, "fwd_tmp_bytes": 0, "bwd_tmp_bytes": 0},
 {"fwd_time": 1, "bwd_time": 2, "out_bytes": 4, "saved_bytes": 7, "fwd_tmp_bytes": 1, "bwd_tmp_bytes": 1},
 {"fwd_time": 2, "bwd_time": 4, "out_bytes": 1, "saved_bytes": 2, "fwd_tmp_bytes": 0, "bwd_tmp_bytes": 0}],
 "loss": {"fwd_time": 0.5, "bwd_time": 0.5}}`

// writePofoChain writes the worked example of the pofo spec to a chain file.
func writePofoChain(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pofo.json")
	if err := os.WriteFile(path, []byte(pofoExample), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestParseBandwidth(t *testing.T) {
	tests := []struct {
		in      string
		want    float64
		wantErr bool
	}{
		{"12GB/s", 12e9, false},
		{"12GB", 12e9, false},
		{"1.5GiB/s", 1.5 * (1 << 30), false},
		{"1.2e10", 1.2e10, false},
		{"0.5", 0.5, false},
		{" 4 ", 4, false},
		{"0", 0, true},
		{"-3GB/s", 0, true},
		{"NaN", 0, true},
		{"Inf", 0, true},
		{"fast", 0, true},
		{"12XB/s", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseBandwidth(tt.in)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("parseBandwidth(%q)=%v, %v; want %v (error %v)", tt.in, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// TestSolvePofo plans the spec's example with every offloading algorithm in exact bytes,
// checks the JSON extension and replays each plan with simulate.
func TestSolvePofo(t *testing.T) {
	chain := writePofoChain(t)
	tests := []struct {
		algo     string
		makespan float64 // spec §5.8 at M = 22, β = 1 (POFO); 0: only checked by the replay
	}{{"pofo", 20}, {"offload", 0}, {"greedy", 0}, {"autocapper", 0}, {"opportunist", 0}}
	for _, tt := range tests {
		t.Run(tt.algo, func(t *testing.T) {
			code, out, errs := run(t, "solve", "--algo", tt.algo, "--chain", chain, "--budget", "22", "--slots", "22", "--bandwidth", "1")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			var p chainplan.Plan
			if err := json.Unmarshal([]byte(out), &p); err != nil || p.Offload == nil {
				t.Fatalf("not an offloading plan: %v\n%s", err, out)
			}
			if p.Algo != tt.algo || p.Offload.BandwidthBytesPerS != 1 || len(p.Offload.Estimates) != 2 || p.Offload.Timing == nil {
				t.Fatalf("plan %+v", p)
			}
			if tt.makespan != 0 && p.Makespan != tt.makespan {
				t.Fatalf("makespan %v, want %v", p.Makespan, tt.makespan)
			}
			plan := filepath.Join(t.TempDir(), "plan.json")
			if err := os.WriteFile(plan, []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out, errs = run(t, "simulate", "--chain", chain, "--plan", plan, "--format", "json")
			if code != 0 {
				t.Fatalf("simulate exit %d: %s\n%s", code, errs, out)
			}
			var sim offloadSimulation
			if err := json.Unmarshal([]byte(out), &sim); err != nil || !sim.Valid || sim.Makespan != p.Makespan || sim.PeakBytes != p.PeakBytes {
				t.Fatalf("simulate: %v %+v", err, sim)
			}
		})
	}
}

// TestSolvePofoText prints a pofo plan for people.
func TestSolvePofoText(t *testing.T) {
	chain := writePofoChain(t)
	code, out, errs := run(t, "solve", "--algo", "pofo", "--chain", chain, "--budget", "22", "--slots", "22", "--bandwidth", "1B/s", "--format", "text")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"algorithm   pofo", "makespan    20", "bandwidth   1 bytes/s, fractional memory model, synchronized at the loss",
		"transfers   2, 2 B offloaded", "offload  a0", "from the start, starts at 0 s, lasts 2 s", "prefetch a0", "before op 9 (F_all 1), starts at 15 s", "integral   makespan 20 s",
		"  rotor        makespan 22 s, peak 22 B (solved in ",
		"chosen      ", "candidates\n", "  rotor        "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestSolvePofoErrors checks the CLI contract for the offloading flags: bad usage exits 2
// naming the flag, a budget too small exits 3 with the smallest one.
func TestSolvePofoErrors(t *testing.T) {
	chain := writePofoChain(t)
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"MissingBandwidth", []string{"--algo", "pofo", "--budget", "22"}, 2, "needs --bandwidth"},
		{"ZeroBandwidth", []string{"--algo", "pofo", "--budget", "22", "--bandwidth", "0"}, 2, "--bandwidth \"0\": must be a positive"},
		{"BadBandwidth", []string{"--algo", "offload", "--budget", "22", "--bandwidth", "quick"}, 2, "--bandwidth \"quick\""},
		{"BandwidthForRotor", []string{"--algo", "rotor", "--budget", "22", "--bandwidth", "1"}, 2, "offloading algorithms only"},
		{"UpperCaseAlgo", []string{"--algo", "POFO", "--budget", "22", "--bandwidth", "1"}, 2, `unknown algorithm "POFO" (names are lower-case: did you mean "pofo"?`},
		{"UpperCaseAlgoNoBandwidth", []string{"--algo", "Pofo", "--budget", "22"}, 2, `unknown algorithm "Pofo"`},
		{"BandwidthUnit", []string{"--algo", "pofo", "--budget", "22", "--bandwidth", "1XB/s"}, 2, `--bandwidth "1XB/s": unknown unit "XB"`},
		{"Infeasible", []string{"--algo", "pofo", "--budget", "15", "--slots", "15", "--bandwidth", "1"}, 3, "smallest feasible budget"},
		{"InfeasibleOffload", []string{"--algo", "offload", "--budget", "15", "--slots", "15", "--bandwidth", "1"}, 3, "smallest feasible budget"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errs := run(t, append([]string{"solve", "--chain", chain}, tt.args...)...)
			if code != tt.code || !strings.Contains(errs, tt.want) {
				t.Fatalf("exit %d, stderr %q; want %d mentioning %q", code, errs, tt.code, tt.want)
			}
		})
	}
}

// TestSimulatePofoPlan replays a hand-written pofo plan (the spec's §5.8 example) and a
// corrupted copy of it.
func TestSimulatePofoPlan(t *testing.T) {
	chain := writePofoChain(t)
	const plan = `{"algo":"pofo","feasible":true,"makespan":20,"peak_bytes":0,"budget_bytes":22,
 "sequence":[{"op":"F_ck","stage":1},{"op":"F_all","stage":2},{"op":"F_all","stage":3},{"op":"F_all","stage":4},
  {"op":"F_all","stage":5},{"op":"B","stage":5},{"op":"B","stage":4},{"op":"B","stage":3},{"op":"B","stage":2},
  {"op":"F_all","stage":1},{"op":"B","stage":1}],
 "offload":{"bandwidth_bytes_per_s":1,"memory_model":"integral","sync_at_loss":true,
  "transfers":[{"dir":"offload","tensor":"a0","bytes":2,"after":-1},{"dir":"prefetch","tensor":"a0","bytes":2,"before":9}],
  "timing":{"compute_start":[0,1,3,4,6,6.5,7,11,13,17,18],"transfer_start":[0,15]}}}`
	tests := []struct {
		name, plan string
		code       int
		want       []string
	}{
		{"Valid", plan, 0, []string{"valid, 11 operations, 2 transfers", "makespan    20", "integral   valid, makespan 20"}},
		{"Budget", strings.Replace(plan, `"budget_bytes":22`, `"budget_bytes":15`, 1), 2, []string{"INVALID", "over the limit"}},
		{"BadTiming", strings.Replace(plan, `"transfer_start":[0,15]`, `"transfer_start":[0,16]`, 1), 2, []string{"the plan's timing", "ends after op 9 starts"}},
		{"ClaimedMakespan", strings.Replace(plan, `"makespan":20`, `"makespan":19`, 1), 2, []string{"claims makespan 19"}},
		{"NoPrefetch", strings.Replace(strings.Replace(plan, `,{"dir":"prefetch","tensor":"a0","bytes":2,"before":9}`, ``, 1),
			`"transfer_start":[0,15]`, `"transfer_start":[0]`, 1), 2, []string{"never prefetched"}},
		{"TimingLength", strings.Replace(plan, `"transfer_start":[0,15]`, `"transfer_start":[0]`, 1), 2, []string{"timing has 11 compute and 1 transfer starts"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "plan.json")
			if err := os.WriteFile(path, []byte(tt.plan), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out, errs := run(t, "simulate", "--chain", chain, "--plan", path)
			if code != tt.code {
				t.Fatalf("exit %d, want %d: %s\n%s", code, tt.code, errs, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out+errs, w) {
					t.Errorf("output lacks %q:\n%s%s", w, out, errs)
				}
			}
		})
	}
	// The timing-free plan is timed by the simulator: same makespan.
	noTiming := strings.Replace(plan, `,
  "timing":{"compute_start":[0,1,3,4,6,6.5,7,11,13,17,18],"transfer_start":[0,15]}`, ``, 1)
	path := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(path, []byte(noTiming), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := run(t, "simulate", "--chain", chain, "--plan", path, "--format", "json")
	var sim offloadSimulation
	if code != 0 || json.Unmarshal([]byte(out), &sim) != nil || math.Abs(sim.Makespan-20) > 1e-12 || sim.PeakBytes != 21 {
		t.Fatalf("exit %d: %s", code, out)
	}
}
