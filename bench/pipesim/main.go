// Command pipesim evaluates the pipeline schedules of planner/pipesim on PipeDream's
// published profiles (issue 25; spec paradl_amp_timeprest.md §5.4, §4.10): each of the
// eight profiles of testdata/pipedream, linearized by `chainplan import pipedream`, cut
// into P ∈ {2, 4, 8} stages of balanced load (contiguous.Balanced) with links of 12 GB/s,
// simulated under every schedule for N ∈ {1, 8, 32} micro-batches per mini-batch, and
// periodic replaying the optimal contiguous plan. It records the time per micro-batch,
// the steady-state bubble, the peak memory and the weight versions, checks the closed
// forms and the replays on the real profiles, sets TiMePReSt against PipeDream on two
// devices (the paper's setting), and writes docs/pipesim-eval.md, docs/pipesim-eval.csv,
// the pictures docs/pipesim-eval-speedup.svg and docs/pipesim-eval-memory.svg, the Gantt
// examples docs/pipesim-timeprest.svg and docs/pipesim-1f1b.svg, and the Chrome trace
// example docs/pipesim-trace-example.json.
//
// Usage, from the repository root:
//
//	go run ./bench/pipesim [-models resnet50,vgg16] [-gpus 2,4,8] [-microbatches 1,8,32] [-minibatches 24] [-out docs]
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/bench/internal/profiles"
	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/contiguous"
	"github.com/chainplan/chainplan/planner/pipeline"
	"github.com/chainplan/chainplan/planner/pipesim"
)

// models are the shared PipeDream profiles, in table order.
var models = []string{"alexnet", "vgg16", "resnet18", "resnet50", "resnet101", "densenet121", "inception_v3", "gnmt"}

// variant is a column of the tables: a schedule, with TiMePReSt's cap on the mini-batches
// in flight for one of them.
type variant struct {
	name     string
	schedule pipesim.Schedule
	cap      int
}

// schedules are the simulated variants, in table order; periodic replays the contiguous
// plan; TiMePReSt runs as in the paper (no cap) and capped at two mini-batches in flight.
var schedules = []variant{
	{"gpipe", pipesim.GPipe, 0}, {"1f1b-flush", pipesim.OneFOneBFlush, 0}, {"pipedream-async", pipesim.PipeDreamAsync, 0},
	{"2bw", pipesim.TwoBW, 0}, {"timeprest", pipesim.TiMePReSt, 0}, {"timeprest-cap2", pipesim.TiMePReSt, 2},
	{"periodic", pipesim.Periodic, 0},
}

// bandwidth is the links' bandwidth in bytes per second (the MadPipe paper's 12 GB/s).
const bandwidth = 12e9

// weightCopies counts a device's weights and gradients; versions beyond one add a copy each.
const weightCopies = 2

// outcome is one schedule's simulation at one point (ok false: the schedule does not apply).
type outcome struct {
	ok       bool
	why      string
	res      *pipesim.Result
	stages   int     // the stages simulated (periodic: the contiguous plan's, which may be fewer)
	bubble   float64 // mean steady bubble over stages
	peak     int64   // the largest device's peak
	versions int     // the most weight versions a stage held
}

// point is one (model, P, N) with every schedule's outcome.
type point struct {
	model string
	chain *chainplan.Chain
	gpus  int
	n     int
	seq   float64            // U(1,L): one micro-batch on one device
	res   map[string]outcome // by variant name
	// The plan periodic replays, and whether the replay found its period and memory.
	plan      *pipeplan.Plan
	replayOK  bool
	formulas  [3]float64 // AMP, GPipe (simulated without communication), ParaDL
	closedErr float64    // |GPipe simulated − closed form| / closed form
}

func main() {
	modelList := flag.String("models", strings.Join(models, ","), "profiles of testdata/pipedream to evaluate")
	gpuList := flag.String("gpus", "2,4,8", "stage counts P")
	nList := flag.String("microbatches", "1,8,32", "micro-batches per mini-batch N")
	k := flag.Int("minibatches", 24, "mini-batches simulated per point")
	out := flag.String("out", "docs", "output folder")
	flag.Parse()
	gpus, err := parseInts("-gpus", *gpuList)
	var ns []int
	if err == nil {
		ns, err = parseInts("-microbatches", *nList)
	}
	if err == nil && *k < 4 {
		err = fmt.Errorf("-minibatches %d: want at least 4", *k)
	}
	if err == nil {
		err = run(strings.Split(*modelList, ","), gpus, ns, *k, *out)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "pipesim:", err)
		os.Exit(1)
	}
}

func parseInts(flagName, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s: %q is not a positive integer", flagName, f)
		}
		out = append(out, n)
	}
	return out, nil
}

func run(names []string, gpus, ns []int, k int, out string) error {
	start := time.Now()
	var all []*point
	var claims []*claim
	for _, name := range names {
		c, err := profiles.PipeDream(name)
		if err != nil {
			return err
		}
		for _, p := range gpus {
			for _, n := range ns {
				pt, err := evaluate(name, c, p, n, k)
				if err != nil {
					return fmt.Errorf("%s P=%d N=%d: %w", name, p, n, err)
				}
				all = append(all, pt)
			}
		}
		cl, err := timeprestClaims(name, c, k)
		if err != nil {
			return fmt.Errorf("%s, TiMePReSt against PipeDream: %w", name, err)
		}
		claims = append(claims, cl...)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "pipesim-eval.csv"), []byte(csvReport(all)), 0o644); err != nil {
		return err
	}
	if err := writePlots(out, all, ns); err != nil {
		return err
	}
	if err := writeExamples(out); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "pipesim-eval.md"), []byte(report(all, claims, gpus, ns, k, time.Since(start))), 0o644)
}

// ample is a memory per device no plan reaches: the contiguous planner needs one.
const ample = 1 << 50

// problem is the model of c on p devices of memory bytes each (0: none checked): 12 GB/s
// links, two weight copies, saved activations.
func problem(c *chainplan.Chain, p int, memory int64) (*pipeline.Problem, error) {
	return pipeline.NewProblem(c, pipeplan.Options{GPUs: p, MemoryBytes: memory, Bandwidth: bandwidth, WeightCopies: weightCopies})
}

// evaluate simulates every schedule at one point.
func evaluate(name string, c *chainplan.Chain, p, n, k int) (*point, error) {
	pr, err := problem(c, p, ample)
	if err != nil {
		return nil, err
	}
	pt := &point{model: name, chain: c, gpus: p, n: n, seq: pr.TotalWork(), res: map[string]outcome{}}
	stages := contiguous.Balanced(pr, p)
	su, err := pipesim.NewSetup(pr, stages, pipesim.SetupOptions{Links: true})
	if err != nil {
		return nil, err
	}
	for _, v := range schedules {
		o := pipesim.Options{Schedule: v.schedule, Microbatches: n, Minibatches: k, MaxInflight: v.cap}
		setup := su
		if v.schedule == pipesim.TwoBW && n < len(stages)-1 {
			pt.res[v.name] = outcome{why: fmt.Sprintf("needs N ≥ %d", len(stages)-1)}
			continue
		}
		if v.schedule == pipesim.Periodic {
			if pt.plan, err = contiguous.Solve(pr); err != nil {
				return nil, err
			}
			if setup, err = pipesim.PlanSetup(pr, pt.plan); err != nil {
				return nil, err
			}
		}
		r, err := pipesim.Simulate(setup, o)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", v.name, err)
		}
		pt.res[v.name] = summarise(r)
	}
	// The periodic replay of the plan: its period and memory per device, on a stream long
	// enough for the steady state (one micro-batch per mini-batch).
	long, err := replayLong(pr, pt.plan)
	if err != nil {
		return nil, err
	}
	pt.replayOK = math.Abs(long.MicrobatchPeriod-pt.plan.Period) <= 1e-9*pt.plan.Period
	for g, d := range long.PerDevice {
		pt.replayOK = pt.replayOK && d.PeakBytes == pt.plan.MemoryPerGPU[g]
	}
	// The formulas of spec §6.2 without communication.
	free, err := pipesim.NewSetup(pr, stages, pipesim.SetupOptions{})
	if err != nil {
		return nil, err
	}
	g, err := pipesim.Simulate(free, pipesim.Options{Schedule: pipesim.GPipe, Microbatches: n, Minibatches: 1})
	if err != nil {
		return nil, err
	}
	var f, b []float64
	for _, s := range stages {
		c, err := pr.Cost(s)
		if err != nil {
			return nil, err
		}
		f, b = append(f, c.Fwd), append(b, c.Bwd)
	}
	closed := pipesim.GPipeMakespan(f, b, n)
	pt.formulas = [3]float64{pipesim.AMPMakespan(f, b, n), g.Makespan, pipesim.ParaDLMakespan(f, b, n)}
	pt.closedErr = math.Abs(g.Makespan-closed) / closed
	return pt, nil
}

func replayLong(pr *pipeline.Problem, p *pipeplan.Plan) (*pipesim.Result, error) {
	su, err := pipesim.PlanSetup(pr, p)
	if err != nil {
		return nil, err
	}
	maxShift := 0
	for _, o := range p.Pattern {
		maxShift = max(maxShift, o.Shift)
	}
	return pipesim.Simulate(su, pipesim.Options{Schedule: pipesim.Periodic, Microbatches: 1, Minibatches: 4*(maxShift+len(p.Stages)) + 16})
}

func summarise(r *pipesim.Result) outcome {
	o := outcome{ok: true, res: r, stages: len(r.Stages)}
	for _, s := range r.PerStage {
		o.bubble += s.SteadyBubble / float64(len(r.PerStage))
		o.versions = max(o.versions, s.WeightVersions)
	}
	for _, d := range r.PerDevice {
		o.peak = max(o.peak, d.PeakBytes)
	}
	return o
}
