package pipesim_test

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/internal/pipechains"
	"github.com/chainplan/chainplan/planner/pipeline"
	"github.com/chainplan/chainplan/planner/pipesim"
)

// TestBadOptions: every bad request is an *OptionError naming the option, wrapping
// chainplan.ErrUnsupported (the CLI's exit status 2).
func TestBadOptions(t *testing.T) {
	su := unitSetup(t, 4)
	tests := []struct {
		name  string
		o     pipesim.Options
		field string
		msg   string
	}{
		{"unknown schedule", pipesim.Options{Schedule: "1f1b", Microbatches: 2}, "schedule", "unknown schedule"},
		{"no micro-batches", pipesim.Options{Schedule: pipesim.GPipe}, "microbatches", "N ≥ 1"},
		{"negative mini-batches", pipesim.Options{Schedule: pipesim.GPipe, Microbatches: 2, Minibatches: -1}, "minibatches", "K ≥ 1"},
		{"too large", pipesim.Options{Schedule: pipesim.GPipe, Microbatches: 100000, Minibatches: 1000}, "minibatches",
			"make 1.6e+09 tasks, 149.01 GiB while the simulation runs, over the limit of 2.00 GiB (CHAINPLAN_TABLE_LIMIT)"},
		{"cap elsewhere", pipesim.Options{Schedule: pipesim.GPipe, Microbatches: 2, MaxInflight: 2}, "max_inflight", "timeprest only"},
		{"negative cap", pipesim.Options{Schedule: pipesim.TiMePReSt, Microbatches: 2, MaxInflight: -1}, "max_inflight", "≥ 1"},
		{"flush elsewhere", pipesim.Options{Schedule: pipesim.PipeDreamAsync, Microbatches: 2, Flush: true}, "flush", "periodic only"},
		{"periodic without plan", pipesim.Options{Schedule: pipesim.Periodic, Microbatches: 2}, "plan", "replays"},
		{"2bw with few micro-batches", pipesim.Options{Schedule: pipesim.TwoBW, Microbatches: 2}, "microbatches", "N ≥ S−1 = 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := pipesim.Simulate(su, tt.o)
			var oe *pipesim.OptionError
			if !errors.As(err, &oe) || oe.Field != tt.field || !strings.Contains(err.Error(), tt.msg) || !errors.Is(err, chainplan.ErrUnsupported) {
				t.Fatalf("Simulate: %v; want an option error on %s saying %q", err, tt.field, tt.msg)
			}
		})
	}
}

// TestBadSetups: stages that do not cover the chain, shared devices, bad checkpoint lists
// and latencies are refused, naming the problem.
func TestBadSetups(t *testing.T) {
	one := []float64{1, 1, 1}
	pr, err := pipeline.NewProblem(pipechains.Chain(one, one, nil, nil), pipeplan.Options{GPUs: 3, Bandwidth: 1})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		stages []pipeplan.Stage
		o      pipesim.SetupOptions
		msg    string
	}{
		{"gap", []pipeplan.Stage{{First: 1, Last: 1}, {First: 3, Last: 3, GPU: 1}}, pipesim.SetupOptions{}, "starts at layer 3, want 2"},
		{"short", []pipeplan.Stage{{First: 1, Last: 2}}, pipesim.SetupOptions{}, "end at layer 2, the chain has 3"},
		{"beyond", []pipeplan.Stage{{First: 1, Last: 4}}, pipesim.SetupOptions{}, "ends at layer 4"},
		{"device", []pipeplan.Stage{{First: 1, Last: 3, GPU: 3}}, pipesim.SetupOptions{}, "device 3"},
		{"shared", []pipeplan.Stage{{First: 1, Last: 1}, {First: 2, Last: 3}}, pipesim.SetupOptions{}, "both on device 0"},
		{"none", nil, pipesim.SetupOptions{}, "no stages"},
		{"checkpoint", stagesOf(3), pipesim.SetupOptions{Checkpointed: []int{3}}, "stage 3 is not in 0..2"},
		{"alpha without links", stagesOf(3), pipesim.SetupOptions{AlphaS: 1e-3}, "needs the link model"},
		{"negative alpha", stagesOf(3), pipesim.SetupOptions{Links: true, AlphaS: -1}, "latency ≥ 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := pipesim.NewSetup(pr, tt.stages, tt.o)
			if !errors.Is(err, chainplan.ErrUnsupported) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("NewSetup: %v; want %q", err, tt.msg)
			}
		})
	}
}

func TestParseStages(t *testing.T) {
	stages, n, err := pipesim.ParseStages("1-2, 3 ,4-6", 6)
	want := []pipeplan.Stage{{First: 1, Last: 2, GPU: 0}, {First: 3, Last: 3, GPU: 1}, {First: 4, Last: 6, GPU: 2}}
	if err != nil || n != 0 || len(stages) != 3 || stages[0] != want[0] || stages[1] != want[1] || stages[2] != want[2] {
		t.Fatalf("ParseStages = %v, %d, %v; want %v", stages, n, err, want)
	}
	if stages, n, err := pipesim.ParseStages("4", 6); err != nil || n != 4 || stages != nil {
		t.Fatalf("ParseStages(4) = %v, %d, %v; want a count of 4", stages, n, err)
	}
	for spec, msg := range map[string]string{
		"":        "empty",
		"0":       "want 1..6",
		"7":       "want 1..6",
		"1-3,5-6": "starts at layer 5, want 4",
		"1-3,4-5": "end at layer 5, the chain has 6",
		"1-3,4-9": "ends at layer 9",
		"1-3,x":   `"x" is not a layer range`,
		"1-3,5-4": "starts at layer 5",
		"1-3,4-3": "ends before it starts",
	} {
		if _, _, err := pipesim.ParseStages(spec, 6); !errors.Is(err, chainplan.ErrUnsupported) || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseStages(%q): %v; want %q", spec, err, msg)
		}
	}
}

// Per-boundary links replace the problem's bandwidth and latency on their boundary: one
// micro-batch over two stages lasts f0 + t + f1 + b1 + t + b0 with t = α + a/β of the
// boundary's own link. Bad links name the option.
func TestBoundaryLinks(t *testing.T) {
	f, b, a := []float64{1, 1}, []float64{2, 2}, []int64{0, 10, 10}
	for _, tt := range []struct {
		links []pipesim.BoundaryLink
		want  float64
	}{
		{nil, 6 + 2*10}, // the problem's β = 1, no latency
		{[]pipesim.BoundaryLink{{Bandwidth: 5, LatencyS: 1}}, 6 + 2*(1+10.0/5)},
	} {
		su := mustSetup(t, f, b, a, 1, pipesim.SetupOptions{Boundaries: tt.links})
		r, err := pipesim.Simulate(su, pipesim.Options{Schedule: pipesim.GPipe, Microbatches: 1, Minibatches: 1})
		if err != nil {
			t.Fatal(err)
		}
		if r.Makespan != tt.want {
			t.Errorf("links %v: makespan %v, want %v", tt.links, r.Makespan, tt.want)
		}
	}
	pr, err := pipeline.NewProblem(pipechains.Chain(f, b, nil, a), pipeplan.Options{GPUs: 2, Bandwidth: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []pipesim.SetupOptions{
		{Boundaries: []pipesim.BoundaryLink{{Bandwidth: 1}}},
		{Links: true, Boundaries: []pipesim.BoundaryLink{{Bandwidth: 1}, {Bandwidth: 1}}},
		{Links: true, Boundaries: []pipesim.BoundaryLink{{Bandwidth: 0}}},
		{Links: true, Boundaries: []pipesim.BoundaryLink{{Bandwidth: 1, LatencyS: -1}}},
	} {
		var oe *pipesim.OptionError
		if _, err := pipesim.NewSetup(pr, stagesOf(2), bad); !errors.As(err, &oe) || oe.Field != "boundaries" {
			t.Errorf("%+v: %v, want an option error on boundaries", bad, err)
		}
	}
}

// TestTaskLimit: a simulation's tasks are held to chainplan.TableLimit before anything is
// allocated, $CHAINPLAN_TABLE_LIMIT moving the limit.
func TestTaskLimit(t *testing.T) {
	su := unitSetup(t, 4)
	o := pipesim.Options{Schedule: pipesim.GPipe, Microbatches: 8, Minibatches: 1000}
	if _, err := pipesim.Simulate(su, o); err != nil {
		t.Fatalf("128 000 tasks under the default limit: %v", err)
	}
	t.Setenv(chainplan.TableLimitEnv, "1MiB")
	var err error
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = pipesim.Simulate(su, o)
	runtime.ReadMemStats(&after)
	var oe *pipesim.OptionError
	if !errors.As(err, &oe) || oe.Field != "minibatches" || !strings.Contains(err.Error(), "over the limit of 1.00 MiB") {
		t.Fatalf("under 1 MiB: %v", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Fatalf("allocated %d bytes before refusing", n)
	}
}
