package planner_test

import (
	"encoding/json"
	"errors"
	"regexp"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner"
	"github.com/chainplan/chainplan/planner/pipeline"
	"github.com/chainplan/chainplan/planner/pipesim"
)

// TestRegistryEntries checks what the CLI, the bindings and the request check rely on:
// unique lower-case names, a known family with its format, the fields known, and the
// functions of the family set.
func TestRegistryEntries(t *testing.T) {
	formats := map[planner.Family]string{
		planner.Checkpointing: "chainplan.schedule/v1",
		planner.Offloading:    "chainplan.schedule/v1+offload",
		planner.Pipeline:      "chainplan.pipeline/v1",
		planner.Multichain:    "chainplan.schedule/v1+multichain",
		planner.Simulation:    "chainplan.pipesim/v1",
	}
	parallelFormats := map[string]string{"advise": "chainplan.advice/v1", "search3d": "chainplan.search3d/v1"}
	known := map[planner.Field]bool{planner.FieldSlots: true, planner.FieldSegments: true, planner.FieldBandwidth: true}
	name := regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`) // lower-case; schedules such as 1f1b-flush start with a digit
	seen := map[string]bool{}
	entries := planner.Entries()
	if len(entries) == 0 || entries[0].Name != "rotor" {
		t.Fatalf("the table must start with the default algorithm, rotor: %v", entries)
	}
	for _, e := range entries {
		if !name.MatchString(e.Name) || seen[e.Name] {
			t.Errorf("name %q: not lower-case or repeated", e.Name)
		}
		seen[e.Name] = true
		if e.Family == planner.Parallel {
			// One function set each, the result format of its planner.
			if e.Schedule != nil || e.Pipeline != nil || e.Parallel == nil ||
				(e.Parallel.Advise == nil) == (e.Parallel.Search3D == nil) || e.Format != parallelFormats[e.Name] {
				t.Errorf("%s: a parallel entry sets exactly one of Parallel.Advise and Parallel.Search3D (format %q)", e.Name, e.Format)
			}
			continue
		}
		if f, ok := formats[e.Family]; !ok || e.Format != f {
			t.Errorf("%s: family %q with format %q", e.Name, e.Family, e.Format)
		}
		if e.Summary == "" {
			t.Errorf("%s: no summary", e.Name)
		}
		for _, f := range append(append([]planner.Field{}, e.Needs...), e.Takes...) {
			if !known[f] {
				t.Errorf("%s: unknown field %q", e.Name, f)
			}
		}
		if e.Family == planner.Offloading && !e.Reads(planner.FieldBandwidth) {
			t.Errorf("%s: an offloading algorithm without a bandwidth", e.Name)
		}
		if e.Family == planner.Pipeline {
			if e.Schedule != nil || e.Simulation != nil || e.Pipeline == nil || e.Pipeline.Solve == nil {
				t.Errorf("%s: a pipeline entry has Pipeline.Solve and no Schedule", e.Name)
			}
			continue
		}
		if e.Family == planner.Multichain {
			if f := e.Multichain; e.Schedule != nil || e.Pipeline != nil || e.Simulation != nil || f == nil || f.Solve == nil || f.MinBudget == nil || f.Simulate == nil {
				t.Errorf("%s: a multichain entry has Multichain.Solve, MinBudget and Simulate, and nothing else", e.Name)
			}
			continue
		}
		if e.Family == planner.Simulation {
			if e.Schedule != nil || e.Pipeline != nil || e.Multichain != nil || e.Simulation == nil || e.Simulation.Simulate == nil {
				t.Errorf("%s: a simulation entry has Simulation.Simulate and nothing else", e.Name)
			}
			continue
		}
		if e.Pipeline != nil || e.Multichain != nil || e.Simulation != nil || e.Parallel != nil {
			t.Errorf("%s: a %s entry with pipeline, multichain, simulation or parallel functions", e.Name, e.Family)
		}
		if s := e.Schedule; s == nil || s.Solve == nil || s.MinBudget == nil || s.Simulate == nil {
			t.Errorf("%s: a %s entry needs Schedule.Solve, MinBudget and Simulate", e.Name, e.Family)
		}
		if got, ok := planner.Lookup(e.Name); !ok || got.Name != e.Name {
			t.Errorf("Lookup(%q) = %v, %v", e.Name, got.Name, ok)
		}
	}
	if _, ok := planner.Lookup("Rotor"); ok {
		t.Error("Lookup is case-sensitive: Rotor is no algorithm")
	}
}

// TestRegistryJSON checks the table as the Python side reads it.
func TestRegistryJSON(t *testing.T) {
	b, err := json.Marshal(planner.Entries())
	if err != nil {
		t.Fatal(err)
	}
	var got []struct {
		Name     string   `json:"name"`
		Family   string   `json:"family"`
		Format   string   `json:"format"`
		Summary  string   `json:"summary"`
		Needs    []string `json:"needs"`
		Takes    []string `json:"takes"`
		Frontier bool     `json:"frontier"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	byName := map[string]int{}
	for i, e := range got {
		byName[e.Name] = i
		if e.Needs == nil || e.Takes == nil {
			t.Errorf("%s: needs and takes must be lists, never null: %s", e.Name, b)
		}
	}
	pofo, rotor, store := got[byName["pofo"]], got[byName["rotor"]], got[byName["store-all"]]
	if pofo.Family != "offloading" || len(pofo.Needs) != 1 || pofo.Needs[0] != "bandwidth" || pofo.Frontier {
		t.Errorf("pofo: %+v", pofo)
	}
	if !rotor.Frontier || !got[byName["revolve"]].Frontier || store.Frontier {
		t.Errorf("frontiers: rotor %v, store-all %v", rotor.Frontier, store.Frontier)
	}
	if seq := got[byName["sequential"]]; len(seq.Takes) != 1 || seq.Takes[0] != "segments" {
		t.Errorf("sequential: %+v", seq)
	}
}

// TestSolvePipelineThroughTheRegistry plans a small chain with every pipeline entry, at a
// given memory and at the smallest where the entry can search for it, and checks that the
// façade refuses a checkpointing name and an unknown one.
func TestSolvePipelineThroughTheRegistry(t *testing.T) {
	c := &chainplan.Chain{Format: chainplan.ChainFormat, InputBytes: 4, Stages: []chainplan.Stage{
		{FwdTime: 1, BwdTime: 2, OutBytes: 4, SavedBytes: 4, ParamBytes: 8},
		{FwdTime: 2, BwdTime: 3, OutBytes: 4, SavedBytes: 4, ParamBytes: 8},
		{FwdTime: 1, BwdTime: 2, OutBytes: 4, SavedBytes: 4, ParamBytes: 8},
		{FwdTime: 2, BwdTime: 2, OutBytes: 4, SavedBytes: 4, ParamBytes: 8},
	}}
	opts := pipeplan.Options{GPUs: 2, MemoryBytes: 1 << 20, Bandwidth: 1e9, WeightCopies: 2}
	algos := planner.PipelineAlgos()
	if len(algos) != 3 {
		t.Fatalf("pipeline algorithms %v", algos)
	}
	for _, a := range algos {
		p, _, err := planner.SolvePipeline(c, pipeplan.Request{Algo: a, Options: opts})
		if err != nil {
			t.Fatalf("%s: %v", a, err)
		}
		pr, err := pipeline.NewProblem(c, opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := pipeline.Check(pr, p); err != nil {
			t.Errorf("%s: plan does not validate: %v", a, err)
		}
		if e, _ := planner.Lookup(a); e.Pipeline.MinMemory != nil {
			pm, _, err := planner.SolvePipeline(c, pipeplan.Request{Algo: a, Options: opts, MinMemory: true})
			if err != nil || pm.MemoryBytes >= opts.MemoryBytes {
				t.Errorf("%s at its smallest memory: %v, %v", a, pm, err)
			}
		}
	}
	for _, bad := range []string{"rotor", "MadPipe"} {
		if _, _, err := planner.SolvePipeline(c, pipeplan.Request{Algo: bad, Options: opts}); !errors.Is(err, chainplan.ErrUnsupported) {
			t.Errorf("%s: %v", bad, err)
		}
	}
	if _, err := planner.Solve(c, planner.Request{Algo: "madpipe", BudgetBytes: 100}); !errors.Is(err, chainplan.ErrUnsupported) {
		t.Errorf("Solve with a pipeline algorithm: %v", err)
	}
}

// TestSimulateThroughTheRegistry runs every simulated schedule through the façade on a
// small pipeline (periodic on the contiguous plan of it) and checks that it refuses a
// planner's name and an unknown one.
func TestSimulateThroughTheRegistry(t *testing.T) {
	c := &chainplan.Chain{Format: chainplan.ChainFormat, InputBytes: 4, Stages: []chainplan.Stage{
		{FwdTime: 1, BwdTime: 2, OutBytes: 4, SavedBytes: 4, ParamBytes: 8},
		{FwdTime: 2, BwdTime: 3, OutBytes: 4, SavedBytes: 4, ParamBytes: 8},
	}}
	opts := pipeplan.Options{GPUs: 2, MemoryBytes: 1 << 20, Bandwidth: 1e9, WeightCopies: 2}
	pr, err := pipeline.NewProblem(c, opts)
	if err != nil {
		t.Fatal(err)
	}
	stages := []pipeplan.Stage{{First: 1, Last: 1, GPU: 0}, {First: 2, Last: 2, GPU: 1}}
	su, err := pipesim.NewSetup(pr, stages, pipesim.SetupOptions{Links: true})
	if err != nil {
		t.Fatal(err)
	}
	plan, _, err := planner.SolvePipeline(c, pipeplan.Request{Algo: "contiguous", Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	ps, err := pipesim.PlanSetup(pr, plan)
	if err != nil {
		t.Fatal(err)
	}
	names := planner.Schedules()
	if len(names) != len(pipesim.Schedules) {
		t.Fatalf("schedules %v, pipesim has %v", names, pipesim.Schedules)
	}
	for _, name := range names {
		setup := su
		if name == string(pipesim.Periodic) {
			setup = ps
		}
		r, err := planner.SimulatePipeline(name, setup, pipesim.Options{Microbatches: 2, Minibatches: 3})
		if err != nil || string(r.Schedule) != name || !(r.Makespan > 0) {
			t.Fatalf("%s: %+v, %v", name, r, err)
		}
	}
	for _, bad := range []string{"madpipe", "GPipe"} {
		if _, err := planner.SimulatePipeline(bad, su, pipesim.Options{Microbatches: 2}); !errors.Is(err, chainplan.ErrUnsupported) {
			t.Errorf("%s: %v, want ErrUnsupported", bad, err)
		}
	}
}
