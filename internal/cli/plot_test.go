package cli

import (
	"bytes"
	"context"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chainplan/chainplan/internal/service"
)

// pipelinePlanDoc is a two-stage pipeline plan of DESIGN.md's contract.
const pipelinePlanDoc = `{"format": "chainplan.pipeline/v1", "algo": "madpipe", "gpus": 2, "memory_bytes": 8e9,
 "bandwidth": 1.2e10, "weight_copies": 2, "activation_model": "saved", "period": 0.4,
 "stages": [{"first": 1, "last": 2, "gpu": 0}, {"first": 3, "last": 3, "gpu": 1}],
 "pattern": [{"op": "F", "stage": 0, "start": 0, "duration": 0.1, "shift": 0},
             {"op": "CF", "stage": 0, "start": 0.1, "duration": 0.01, "shift": 0},
             {"op": "F", "stage": 1, "start": 0.11, "duration": 0.1, "shift": 0},
             {"op": "B", "stage": 1, "start": 0.21, "duration": 0.1, "shift": 0},
             {"op": "CB", "stage": 0, "start": 0.31, "duration": 0.01, "shift": 0},
             {"op": "B", "stage": 0, "start": 0.0, "duration": 0.2, "shift": 1}],
 "memory_per_gpu": [5e9, 4e9], "contiguous": true}`

// plotDB is a database with run 1 (the resnet-mini profile), its plan 1 at the smallest
// budget with one recorded execution, and run 2's plan 2 that never ran.
func plotDB(t *testing.T) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "chainplan.db")
	mustIngest(t, db, testdataFile("resnet_file.arrow"))
	for range 2 {
		if code, _, errs := runDB(t, db, "solve", "--run", "1", "--budget", "min"); code != 0 {
			t.Fatalf("solve: %s", errs)
		}
	}
	svc, err := service.Open(context.Background(), db, service.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	if _, err := svc.RecordExecution(context.Background(), 1, service.Execution{StepTimeS: 0.01, PeakBytes: 1 << 20, Device: "cpu"}); err != nil {
		t.Fatal(err)
	}
	return db
}

// wellFormedSVG fails the test unless path holds a well-formed SVG document.
func wellFormedSVG(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(data))
	for {
		if _, err := dec.Token(); err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("%s is not well-formed: %v", path, err)
			}
			break
		}
	}
	if !bytes.Contains(data, []byte("<svg")) {
		t.Fatalf("%s is no SVG", path)
	}
	return string(data)
}

func TestPlot(t *testing.T) {
	db := plotDB(t)
	dir := t.TempDir()
	chain := writeChain(t)
	pipe := filepath.Join(dir, "pipe.json")
	if err := os.WriteFile(pipe, []byte(pipelinePlanDoc), 0o644); err != nil {
		t.Fatal(err)
	}
	out := func(name string) string { return filepath.Join(dir, name) }
	tests := []struct {
		name string
		args []string
		file string
		want []string // texts the SVG must hold
	}{
		{"FrontierChain", []string{"plot", "frontier", "--chain", chain, "-o", out("f.svg")}, "f.svg", []string{"rotor", "revolve", "sequential", "store-all"}},
		{"FrontierRun", []string{"plot", "frontier", "--run", "1", "--plan-id", "1", "--bandwidth", "1GB/s", "--budgets", "3", "-o", out("g.svg")}, "g.svg",
			[]string{"Budget versus time: run 1", "pofo", "offload", "rotor at"}},
		{"FrontierPNG", []string{"plot", "frontier", "--chain", chain, "-o", out("f.png")}, "f.png", nil},
		{"TimelineStored", []string{"plot", "timeline", "--plan-id", "1", "-o", out("t.svg")}, "t.svg",
			[]string{"Plan 1 (run 1): rotor at", "measured peak 1.00 MiB", "compute"}},
		{"Pipeline", []string{"plot", "pipeline", "--plan", pipe, "--periods", "2", "-o", out("p.svg")}, "p.svg",
			[]string{"device 0", "device 1", "link 0-1"}},
		{"History", []string{"plot", "history", "--run", "latest", "-o", out("h.svg")}, "h.svg", []string{"#1", "Predicted against measured: run 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errs := runDB(t, db, tt.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			if strings.HasSuffix(tt.file, ".png") {
				data, err := os.ReadFile(out(tt.file))
				if err != nil || !bytes.HasPrefix(data, []byte("\x89PNG")) {
					t.Fatalf("%s is no PNG (%v)", tt.file, err)
				}
				return
			}
			svg := wellFormedSVG(t, out(tt.file))
			for _, w := range tt.want {
				if !strings.Contains(svg, ">"+w) {
					t.Errorf("%s has no text %q", tt.file, w)
				}
			}
		})
	}
}

func TestPlotBadInput(t *testing.T) {
	db := plotDB(t)
	dir := t.TempDir()
	chain := writeChain(t)
	pipe := filepath.Join(dir, "pipe.json")
	sched := filepath.Join(dir, "plan.json")
	if err := os.WriteFile(pipe, []byte(pipelinePlanDoc), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := run(t, "solve", "--chain", chain, "--budget", "24", "--slots", "24"); code != 0 {
		t.Fatal(errs)
	} else if err := os.WriteFile(sched, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	svg := filepath.Join(dir, "x.svg")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"plot", "frontier", "--chain", chain}, "-o FILE.svg or FILE.png is required"},
		{[]string{"plot", "frontier", "--chain", chain, "-o", filepath.Join(dir, "x.gif")}, `unknown extension ".gif"`},
		{[]string{"plot", "frontier", "-o", svg}, "--chain or --run is required"},
		{[]string{"plot", "frontier", "--run", "9", "-o", svg}, "no run 9"},
		{[]string{"plot", "frontier", "--chain", chain, "--bandwidth", "fast", "-o", svg}, "--bandwidth"},
		{[]string{"plot", "timeline", "--chain", chain, "--plan", pipe, "-o", svg}, "is a pipeline plan"},
		{[]string{"plot", "timeline", "--plan-id", "x", "-o", svg}, "--plan-id must be a plan id"},
		{[]string{"plot", "timeline", "--plan-id", "7", "-o", svg}, "no plan 7"},
		{[]string{"plot", "pipeline", "--plan", sched, "-o", svg}, "a checkpointing or offloading plan has no Gantt chart"},
		{[]string{"plot", "history", "--run", "1", "--model", "m", "-o", svg}, "one of --run RUN and --model NAME"},
		{[]string{"plot", "history", "--model", "nothing", "-o", svg}, "model nothing has 0 plans and no execution"},
		{[]string{"plot", "unknown"}, "unknown command"},
	}
	for _, tt := range tests {
		code, _, errs := runDB(t, db, tt.args...)
		if code != exitBadInput || !strings.Contains(errs, tt.want) {
			t.Errorf("%v: exit %d, %q; want exit 2 and %q", tt.args, code, errs, tt.want)
		}
	}
	if _, err := os.Stat(svg); !os.IsNotExist(err) {
		t.Error("a failed plot left a file behind")
	}
}

// A pofo plan stored by release 0.1 lost its transfers: its timeline is refused by name,
// while the release's rotor plan is drawn.
func TestPlotTimelineReleasePlans(t *testing.T) {
	db := filepath.Join(t.TempDir(), "s.db")
	b, err := os.ReadFile("../../testdata/store/release-0.1.db")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(db, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "t.svg")
	if code, _, errs := runDB(t, db, "plot", "timeline", "--plan-id", "3", "-o", out); code != 2 || !strings.Contains(errs, "transfers were not kept") {
		t.Fatalf("release pofo plan: exit %d: %s", code, errs)
	}
	if code, _, errs := runDB(t, db, "plot", "timeline", "--plan-id", "1", "-o", out); code != 0 {
		t.Fatalf("release rotor plan: exit %d: %s", code, errs)
	}
	wellFormedSVG(t, out)
}

// An offloading plan's timeline has the link lane with its transfers.
func TestPlotTimelineOffloadPlan(t *testing.T) {
	chain := writePofoChain(t)
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.json")
	code, printed, errs := run(t, "solve", "--algo", "pofo", "--chain", chain, "--budget", "min", "--bandwidth", "1")
	if code != 0 {
		t.Fatalf("solve: %s", errs)
	}
	if err := os.WriteFile(plan, []byte(printed), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "t.svg")
	if code, _, errs := run(t, "plot", "timeline", "--chain", chain, "--plan", plan, "-o", out); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if svg := wellFormedSVG(t, out); !strings.Contains(svg, ">link<") || !strings.Contains(svg, ">Memory timeline: pofo at") {
		t.Errorf("no link lane or title in the offloading timeline")
	}
}

// A stored pipeline plan is drawn by its id, its lanes named after the device its run was
// profiled on; a checkpointing plan's id is refused by name, and so is an id with a file.
func TestPlotPipelinePlanID(t *testing.T) {
	db := filepath.Join(t.TempDir(), "p.db")
	mustIngest(t, db, testdataFile("resnet_file.arrow"))
	if code, _, errs := runDB(t, db, "pipeline", "--run", "1", "--gpus", "2", "--memory", "min", "--bandwidth", "1GB/s",
		"--algo", "contiguous"); code != 0 {
		t.Fatalf("pipeline --run: exit %d: %s", code, errs)
	}
	if code, _, errs := runDB(t, db, "solve", "--run", "1", "--budget", "min"); code != 0 {
		t.Fatalf("solve --run: exit %d: %s", code, errs)
	}
	out := filepath.Join(t.TempDir(), "p.svg")
	if code, _, errs := runDB(t, db, "plot", "pipeline", "--plan-id", "1", "-o", out); code != 0 {
		t.Fatalf("plot pipeline --plan-id 1: exit %d: %s", code, errs)
	}
	svg := wellFormedSVG(t, out)
	for _, want := range []string{">CPU 0<", ">link 0-1<", ">Plan 1 (run 1): contiguous on 2 devices"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the picture lacks %q", want)
		}
	}
	if code, _, errs := runDB(t, db, "plot", "pipeline", "--plan-id", "2", "-o", out); code != 2 || !strings.Contains(errs, "not a pipeline plan") {
		t.Errorf("a rotor plan's id: exit %d: %s", code, errs)
	}
	if code, _, errs := runDB(t, db, "plot", "pipeline", "--plan-id", "1", "--plan", out, "-o", out); code != 2 || !strings.Contains(errs, "not both") {
		t.Errorf("--plan-id with --plan: exit %d: %s", code, errs)
	}
}
