package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chainplan/chainplan/planner/amp"
	"github.com/chainplan/chainplan/planner/paradl"
)

const (
	clusters      = "../../examples/clusters/"
	parallelArrow = "../../testdata/profiles/resnet_parallel.arrow"
)

func TestAdviseChain(t *testing.T) {
	plotFile := filepath.Join(t.TempDir(), "scaling.svg")
	jsonFile := filepath.Join(t.TempDir(), "advice.json")
	code, out, errs := run(t, "advise", "--chain", "../../examples/resnet50.json", "--batch", "128",
		"--cluster", clusters+"abci.yaml", "--dataset-size", "1281167", "--batch-per-device", "64",
		"--devices", "4..1024", "--plot", plotFile, "-o", jsonFile)
	if code != 0 || out != "" {
		t.Fatalf("exit %d: %s\nstdout %q, want the output in the file", code, errs, out)
	}
	written, err := os.ReadFile(jsonFile)
	if err != nil {
		t.Fatal(err)
	}
	var a paradl.Advice
	if err := json.Unmarshal(written, &a); err != nil || a.Format != paradl.Format || len(a.Candidates) == 0 {
		t.Fatalf("output: %v\n%s", err, written)
	}
	if best := a.Candidates[0]; best.Rank != 1 || !best.Feasible || best.Devices != 1024 {
		t.Fatalf("best %+v, want data parallelism on 1024 devices first (weak scaling)", best)
	}
	if svg, err := os.ReadFile(plotFile); err != nil || !strings.Contains(string(svg), "time per epoch") {
		t.Fatalf("plot: %v", err)
	}
	// Text: the table, the best, the infeasible reasons.
	code, out, errs = run(t, "advise", "--chain", "../../examples/resnet50.json", "--batch", "128",
		"--cluster", clusters+"abci.yaml", "--dataset-size", "1281167", "--batch-per-device", "64",
		"--devices", "4,64", "--strategies", "data,layer", "--format", "text")
	if code != 0 || !strings.Contains(out, "rank") || !strings.Contains(out, "best: data on 64 devices") ||
		!strings.Contains(out, "layer at 64 devices: p = 64 exceeds the 20 layers") {
		t.Fatalf("exit %d: %s\n%s", code, errs, out)
	}
	// Device counts infeasible for different reasons (each its own memory) get a line each.
	code, out, errs = run(t, "advise", "--chain", "../../examples/resnet50.json", "--batch", "32",
		"--cluster", clusters+"a100-64.yaml", "--dataset-size", "1281167", "--global-batch", "1024",
		"--devices", "2,4,64", "--strategies", "data", "--format", "text")
	if code != 0 || !strings.Contains(out, "data at 2 devices: needs 174.56 GiB per device") ||
		!strings.Contains(out, "data at 4 devices: needs 87.46 GiB per device") {
		t.Fatalf("exit %d: %s\n%s", code, errs, out)
	}
}

// advise and search3d on a stored run record their result; measured runs then give the
// accuracy report.
func TestAdviseRunAndAccuracy(t *testing.T) {
	db := filepath.Join(t.TempDir(), "c.db")
	if code, _, errs := run(t, "--db", db, "ingest", parallelArrow); code != 0 {
		t.Fatalf("ingest: %s", errs)
	}
	code, out, errs := run(t, "--db", db, "advise", "--run", "latest", "--cluster", clusters+"a100-64.yaml",
		"--dataset-size", "50000", "--global-batch", "256", "--devices", "8,64", "--allow-checkpointing", "rotor")
	if code != 0 || !strings.Contains(errs, "recorded as advice 1 of run 1") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var a paradl.Advice
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		t.Fatal(err)
	}
	seen := map[paradl.Strategy]bool{}
	for _, c := range a.Candidates {
		seen[c.Strategy] = true
	}
	if !seen[paradl.Filter] || !seen[paradl.DataSpatial] {
		t.Fatalf("a profile with modules gets filter and data+spatial candidates: %v", seen)
	}
	code, _, errs = run(t, "--db", db, "search3d", "--run", "1", "--cluster", clusters+"a100-64.yaml", "--global-batch", "256",
		"--top-k", "3", "--format", "text")
	if code != 0 || !strings.Contains(errs, "recorded as advice 2") {
		t.Fatalf("search3d exit %d: %s", code, errs)
	}
	for i, f := range []string{"0.9", "1.1"} {
		code, out, errs := run(t, "--db", db, "advice", "record", "1", "--candidate", []string{"0", "1"}[i],
			"--iteration-time", f, "--iterations", "20", "--peak", "3GiB")
		if code != 0 || !strings.Contains(out, "recorded measurement") {
			t.Fatalf("record: exit %d %s", code, errs)
		}
	}
	// A distributed run's per-rank peaks: the largest is the peak the report shows.
	code, out, errs = run(t, "--db", db, "advice", "record", "2", "--candidate", "0", "--iteration-time", "2",
		"--rank-peaks", "1GiB,3GiB")
	if code != 0 || !strings.Contains(out, "recorded measurement") {
		t.Fatalf("record --rank-peaks: exit %d %s", code, errs)
	}
	code, out, _ = run(t, "--db", db, "advice", "accuracy", "2", "--format", "json")
	if code != 0 || !strings.Contains(out, `"measured_peak_bytes": 3221225472`) {
		t.Fatalf("accuracy of the per-rank peaks: exit %d: %s", code, out)
	}
	if code, _, _ := run(t, "--db", db, "advice", "record", "2", "--candidate", "0", "--iteration-time", "2",
		"--rank-peaks", "1GiB,lots"); code != exitBadInput {
		t.Errorf("a bad rank peak: exit %d, want 2", code)
	}
	code, out, errs = run(t, "--db", db, "advice", "accuracy", "1")
	if code != 0 || !strings.Contains(out, "2 measured candidates") || !strings.Contains(out, "Spearman ρ") {
		t.Fatalf("accuracy: exit %d: %s\n%s", code, errs, out)
	}
	code, out, _ = run(t, "--db", db, "sql", "SELECT count(*) AS n FROM advice_accuracy WHERE advice_id = 1")
	if code != 0 || !strings.Contains(out, "2") {
		t.Fatalf("sql over advice_accuracy: %s", out)
	}
	// Not found and bad values.
	for _, args := range [][]string{
		{"advice", "record", "9", "--candidate", "0", "--iteration-time", "1"},
		{"advice", "record", "1", "--candidate", "99", "--iteration-time", "1"},
		{"advice", "accuracy", "9"},
	} {
		if code, _, _ := run(t, append([]string{"--db", db}, args...)...); code != exitBadInput {
			t.Errorf("%v: exit %d, want 2 (not found)", args, code)
		}
	}
	if code, _, _ := run(t, "--db", db, "advice", "record", "1", "--candidate", "0", "--iteration-time", "-1"); code != exitBadInput {
		t.Errorf("a negative time: exit %d, want 2", code)
	}
}

func TestSearch3DChain(t *testing.T) {
	out := filepath.Join(t.TempDir(), "top.json")
	code, _, errs := run(t, "search3d", "--chain", "../../examples/gpt2-medium.json", "--batch", "1",
		"--cluster", clusters+"amp-het-cluster.yaml", "--global-batch", "32", "--device-speed", "T4-16GB=0.35",
		"--cut", "best", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var r amp.Result
	if err := json.Unmarshal(b, &r); err != nil || r.Format != amp.Format || len(r.Candidates) != 10 || r.Enumerated != 53 {
		t.Fatalf("result: %v (%d candidates, %d enumerated)", err, len(r.Candidates), r.Enumerated)
	}
	for _, c := range r.Candidates {
		if !c.Fits || len(c.Stages) != c.PP || c.Stages[0].FirstLayer != 1 || c.Stages[c.PP-1].LastLayer != 26 {
			t.Fatalf("candidate %+v", c)
		}
		if (c.Simulated != nil) != (c.PP > 1) {
			t.Fatalf("candidate %d (pp=%d): pipesim check %+v", c.Rank, c.PP, c.Simulated)
		}
	}
	// The text shows the simulated time beside the prediction, and per stage of the best.
	code, text, errs := run(t, "search3d", "--chain", "../../examples/gpt2-medium.json", "--batch", "1",
		"--cluster", clusters+"amp-het-cluster.yaml", "--global-batch", "32", "--device-speed", "T4-16GB=0.35",
		"--top-k", "3", "--format", "text")
	if code != 0 || !strings.Contains(text, "  simulated  ") || (r.Candidates[0].PP > 1 && !strings.Contains(text, "; simulated ")) {
		t.Fatalf("text: exit %d: %s\n%s", code, errs, text)
	}
}

// Bad input exits 2 and names the problem: a bad cluster file names its field.
func TestParallelBadInput(t *testing.T) {
	bad := writeTemp(t, "bad.yaml", "name: x\nnodes:\n  - {gpu: V, gpus: 2, gpu_mem: 16XB, intra_bw_gbps: 8}\n")
	noInter := writeTemp(t, "inter.yaml", "name: x\nnodes:\n  - {gpu: V, gpus: 2, gpu_mem: 1GB, intra_bw_gbps: 8}\n  - {gpu: V, gpus: 2, gpu_mem: 1GB, intra_bw_gbps: 8}\n")
	chain := "../../examples/resnet50.json"
	base := func(extra ...string) []string {
		return append([]string{"advise", "--chain", chain, "--batch", "128", "--dataset-size", "100", "--global-batch", "8"}, extra...)
	}
	tests := []struct {
		args []string
		want string
	}{
		{base("--cluster", bad), "nodes[0].gpu_mem"},
		{base("--cluster", noInter), "nodes[0].inter_bw"},
		{base("--cluster", clusters+"missing.yaml"), "missing.yaml"},
		{[]string{"advise", "--chain", chain, "--batch", "128", "--cluster", clusters + "abci.yaml", "--dataset-size", "100"}, "--global-batch"},
		{base("--cluster", clusters+"abci.yaml", "--strategies", "tensor"), "unknown strategy"},
		{base("--cluster", clusters+"abci.yaml", "--devices", "8..4"), "--devices"},
		{base("--cluster", clusters+"abci.yaml", "--devices", "9999"), "--devices 9999: 9999 devices is beyond the 4352 of the cluster"},
		// A range beyond the cluster names the range and the limit (it said "device count
		// 8192"), one up to the largest int does not loop forever doubling past it.
		{base("--cluster", clusters+"abci.yaml", "--devices", "1..1073741824"),
			"--devices 1..1073741824: the range goes up to 1073741824 devices, beyond the 4352 of the cluster"},
		{base("--cluster", clusters+"abci.yaml", "--devices", "1..9223372036854775807"), "within 1..4352"},
		{base("--cluster", clusters+"abci.yaml", "--devices", "1..99999999999999999999"), "more than any cluster holds"},
		// A value given and wrong is not "required".
		{[]string{"advise", "--chain", chain, "--batch", "128", "--cluster", clusters + "abci.yaml", "--dataset-size", "-5",
			"--global-batch", "8"}, "--dataset-size must be positive, got -5"},
		{[]string{"advise", "--chain", chain, "--batch", "128", "--cluster", clusters + "abci.yaml", "--dataset-size", "100",
			"--batch-per-device", "0"}, "--batch-per-device must be positive, got 0"},
		{[]string{"advise", "--chain", chain, "--batch", "128", "--cluster", clusters + "abci.yaml", "--dataset-size", "100",
			"--global-batch", "-3"}, "--global-batch must be positive, got -3"},
		{base("--cluster", clusters+"abci.yaml", "--goal", "speed"), "goal"},
		{base("--cluster", clusters+"abci.yaml", "--strategies", "filter"), "modules_json"},
		{base("--cluster", clusters+"abci.yaml", "--gamma", "-2"), "--gamma"},
		{[]string{"advise", "--chain", chain, "--cluster", clusters + "abci.yaml", "--dataset-size", "100", "--global-batch", "8"}, "--batch"},
		{[]string{"search3d", "--chain", chain, "--batch", "128", "--cluster", clusters + "abci.yaml"}, "--global-batch"},
		{[]string{"search3d", "--chain", chain, "--batch", "128", "--cluster", clusters + "abci.yaml", "--global-batch", "8", "--cut", "knife"}, "cut"},
		{[]string{"search3d", "--chain", chain, "--batch", "128", "--cluster", clusters + "amp-het-cluster.yaml", "--global-batch", "8", "--device-speed", "H100=2"}, "no device type"},
		{[]string{"cluster", "check", bad}, "line 3: nodes[0].gpu_mem"},
	}
	for _, tt := range tests {
		code, _, errs := run(t, tt.args...)
		if code != exitBadInput || !strings.Contains(errs, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 naming %q", tt.args, code, errs, tt.want)
		}
	}
}

// No candidate that fits: exit 3, the least memory in the message.
func TestParallelInfeasible(t *testing.T) {
	tiny := writeTemp(t, "tiny.yaml", "name: tiny\nnodes:\n  - {gpu: X, gpus: 2, gpu_mem: 1MB, intra_bw: 1GB/s}\n")
	code, out, errs := run(t, "advise", "--chain", "../../examples/resnet50.json", "--batch", "128", "--cluster", tiny,
		"--dataset-size", "100", "--global-batch", "64", "--format", "text")
	if code != exitInfeasible || !strings.Contains(errs, "least memory any needs") || !strings.Contains(out, "infeasible:") {
		t.Fatalf("advise: exit %d, %s", code, errs)
	}
	code, _, errs = run(t, "search3d", "--chain", "../../examples/resnet50.json", "--batch", "128", "--cluster", tiny,
		"--global-batch", "64")
	if code != exitInfeasible || !strings.Contains(errs, "no candidate fits") {
		t.Fatalf("search3d: exit %d, %s", code, errs)
	}
}

func TestClusterCheck(t *testing.T) {
	code, out, errs := run(t, "cluster", "check", clusters+"amp-het-cluster.yaml", "--format", "text")
	if code != 0 || !strings.Contains(out, "16 devices") || !strings.Contains(out, "g4-0: 4 × T4-16GB") {
		t.Fatalf("exit %d: %s\n%s", code, errs, out)
	}
	code, out, _ = run(t, "cluster", "check", clusters+"abci.yaml")
	if code != 0 || !strings.Contains(out, `"format": "chainplan.cluster/v1"`) {
		t.Fatalf("canonical: %s", out)
	}
}
