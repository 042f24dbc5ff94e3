// Command pipeline evaluates the pipeline planners on PipeDream's published profiles, as in
// the MadPipe paper's §5 and the thesis's §7.3 (madpipe spec §6.1): each of the eight
// profiles of testdata/pipedream, linearized by `chainplan import pipedream`, planned on
// P ∈ {2, 4, 8} devices with links of β ∈ {12, 24} GB/s, at memories per device from the
// smallest any planner can use to ample (7 levels, geometric). For every point it records
// the period of madpipe, contiguous and pipedream, the periods their partitioning phases
// predicted (the paper's dashed lines), the solver times and which plan madpipe returned,
// checks the claims R1-R10 of spec §6.2, and writes docs/pipeline-eval.md,
// docs/pipeline-eval.csv and the speedup plots docs/pipeline-eval-{12,24}GBps.svg.
//
// Usage, from the repository root:
//
//	go run ./bench/pipeline [-models resnet50,vgg16] [-gpus 2,4,8] [-levels 7] [-time-limit 10s] [-out docs]
//
// With -checkpoint it runs the comparison of checkpointing inside stages instead (MadPipe
// with and without it, rotor on one device; checkpoint.go) and rewrites that section of
// docs/pipeline-eval.md only.
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/bench/internal/profiles"
)

// algos are the compared planners, in table order.
var algos = []string{"madpipe", "contiguous", "pipedream"}

// models are the shared PipeDream profiles, in table order.
var models = []string{"alexnet", "vgg16", "resnet18", "resnet50", "resnet101", "densenet121", "inception_v3", "gnmt"}

// bandwidths are the links of the paper's experiments (P:l.265), in bytes per second.
var bandwidths = []float64{12e9, 24e9}

// outcome is one planner's answer at one point.
type outcome struct {
	ok        bool
	period    float64 // the plan's period, seconds
	predicted float64 // the partitioning phase's period (0: not reported)
	peak      float64 // the most memory any device uses, bytes
	solve     time.Duration
	note      string // madpipe: which plan it returned (its own, or the contiguous one)
	err       string
}

// point is one memory level of a series with every planner's outcome.
type point struct {
	memory int64
	res    map[string]outcome
}

// series is one (model, P, β): the memory sweep.
type series struct {
	model string
	chain *chainplan.Chain
	gpus  int
	beta  float64
	// minMem is each planner's smallest memory per device (0: none found), ample the
	// memory above which no planner's period changes.
	minMem map[string]int64
	ample  int64
	// free is each planner's period with unbounded memory.
	free   map[string]outcome
	points []point
}

// seq is the sequential time U(1,L), the base of the speedups (P:l.282).
func (s *series) seq() float64 { return s.chain.SumTime() }

func main() {
	modelList := flag.String("models", strings.Join(models, ","), "profiles of testdata/pipedream to evaluate")
	gpuList := flag.String("gpus", "2,4,8", "device counts")
	levels := flag.Int("levels", 7, "memory levels per series, from the smallest usable to ample (at least 2)")
	limit := flag.Duration("time-limit", 10*time.Second, "time limit of madpipe's scheduling MILP")
	out := flag.String("out", "docs", "output folder")
	ck := flag.Bool("checkpoint", false, "compare checkpointing inside stages and rewrite that section of pipeline-eval.md only")
	flag.Parse()
	gpus, err := parseInts(*gpuList)
	if err == nil && *levels < 2 {
		err = fmt.Errorf("-levels %d: want at least 2", *levels)
	}
	switch {
	case err == nil && *ck:
		err = runCheckpoint(strings.Split(*modelList, ","), gpus, *levels, *limit, *out)
	case err == nil:
		err = run(strings.Split(*modelList, ","), gpus, *levels, *limit, *out)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "pipeline:", err)
		os.Exit(1)
	}
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-gpus: %q is not a positive integer", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func run(names []string, gpus []int, levels int, limit time.Duration, out string) error {
	start := time.Now()
	var all []*series
	for _, name := range names {
		c, err := profiles.PipeDream(name)
		if err != nil {
			return err
		}
		for _, p := range gpus {
			for _, beta := range bandwidths {
				s := &series{model: name, chain: c, gpus: p, beta: beta}
				sweep(s, levels, limit)
				all = append(all, s)
			}
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "pipeline-eval.csv"), []byte(csvReport(all)), 0o644); err != nil {
		return err
	}
	if err := writePlots(out, all); err != nil {
		return err
	}
	path := filepath.Join(out, "pipeline-eval.md")
	text := report(all, limit, time.Since(start))
	// Keep the checkpointing comparison, which -checkpoint writes.
	if old, err := os.ReadFile(path); err == nil {
		o := string(old)
		if i, j := strings.Index(o, ckBegin), strings.Index(o, ckEnd); i >= 0 && j > i {
			k, l := strings.Index(text, ckBegin), strings.Index(text, ckEnd)
			text = text[:k] + o[i:j] + text[l:]
		}
	}
	return os.WriteFile(path, []byte(text), 0o644)
}

// sweep finds the memory range of a series and plans every level. The smallest level is
// the smallest memory any planner finds a plan for; the largest is the largest peak of the
// contiguous and pipedream plans with unbounded memory, from where 1F1B* plans reach their
// memory-free periods. Levels in between are geometric, since memory matters most near
// the bottom. The memory-free plans themselves are kept too (series.free).
func sweep(s *series, levels int, limit time.Duration) {
	s.minMem, s.free = map[string]int64{}, map[string]outcome{}
	lo := int64(math.MaxInt64)
	for _, a := range algos {
		m, err := minMemory(s, a, limit)
		if err != nil {
			logf(s, "%s: no smallest memory: %v", a, err)
			continue
		}
		s.minMem[a] = m
		lo = min(lo, m)
	}
	for _, a := range algos {
		s.free[a] = plan(s, a, unbounded, limit)
		logf(s, "unbounded memory %-10s %s", a, s.free[a].summary())
		// madpipe's schedule with unbounded memory may keep far more mini-batches than
		// its period needs (the MILP does not minimize memory), so its peak does not set
		// the top level; the 1F1B* plans' peaks are the least their periods need.
		if r := s.free[a]; r.ok && a != "madpipe" {
			s.ample = max(s.ample, int64(math.Ceil(r.peak)))
		}
	}
	if lo == math.MaxInt64 || s.ample == 0 {
		logf(s, "no planner finds a plan: skipped")
		return
	}
	// A planner whose own smallest memory lies above every memory-free peak (PipeDream's
	// partition changes with M) still gets a level where it has a plan.
	for _, m := range s.minMem {
		s.ample = max(s.ample, m)
	}
	for k := 0; k < levels; k++ {
		m := lo
		if k == levels-1 {
			m = s.ample
		} else if k > 0 {
			m = int64(float64(lo) * math.Pow(float64(s.ample)/float64(lo), float64(k)/float64(levels-1)))
		}
		if len(s.points) > 0 && s.points[len(s.points)-1].memory == m {
			continue
		}
		pt := point{memory: m, res: map[string]outcome{}}
		for _, a := range algos {
			pt.res[a] = plan(s, a, m, limit)
			logf(s, "M=%s %-10s %s", chainplan.FormatBytes(m), a, pt.res[a].summary())
		}
		s.points = append(s.points, pt)
	}
}

// unbounded is the memory of the memory-free plans: far above any profile's needs.
const unbounded = int64(1) << 48

func (r outcome) summary() string {
	if !r.ok {
		return "no plan: " + r.err
	}
	s := fmt.Sprintf("period %.4g s", r.period)
	if r.predicted > 0 {
		s += fmt.Sprintf(" (predicted %.4g)", r.predicted)
	}
	if r.note != "" {
		s += ", " + r.note
	}
	return s + fmt.Sprintf(", %v", r.solve.Round(time.Millisecond))
}

func logf(s *series, format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s P=%d β=%.0fGB/s: %s\n", s.model, s.gpus, s.beta/1e9, fmt.Sprintf(format, args...))
}

// sortedKeys is for deterministic iteration over small maps.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
