package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/bench/internal/machine"
	"github.com/chainplan/chainplan/bench/internal/profiles"
	"github.com/chainplan/chainplan/bench/internal/stats"
	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/contiguous"
	"github.com/chainplan/chainplan/planner/madpipe"
	"github.com/chainplan/chainplan/planner/pipeline"
	"github.com/chainplan/chainplan/planner/rotor"
)

// The checkpointing comparison (-checkpoint) fills the section of docs/pipeline-eval.md
// between these markers; the rest of the page is the main evaluation's.
const (
	ckBegin = "<!-- checkpoint: go run ./bench/pipeline -checkpoint -->"
	ckEnd   = "<!-- /checkpoint -->"
)

// ckCopies is the weight copies of the comparison: weights, gradients and one optimizer
// buffer (SGD with momentum), the memory chainplan's executor holds with such an optimizer.
const ckCopies = 3

// ckPoint is one memory of a checkpointing series: MadPipe without and with checkpointing
// inside stages, and rotor on one device.
type ckPoint struct {
	memory      int64
	plain, ck   outcome
	recomputing int     // stages of the checkpointing plan that recompute
	rotor       float64 // rotor's makespan on one device of this memory, 0 when none fits
}

// ckSeries is one (model, P) at β = 12 GB/s.
type ckSeries struct {
	model           string
	chain           *chainplan.Chain
	gpus            int
	minPlain, minCk int64
	points          []ckPoint
	seqTime         float64
}

// ckProblem is the runtime model (saved activations, temporaries) at memory, checkpointing
// on or off.
func ckProblem(s *ckSeries, memory int64, ck bool) (*pipeline.Problem, error) {
	return pipeline.NewProblem(s.chain, pipeplan.Options{GPUs: s.gpus, MemoryBytes: memory, Bandwidth: 12e9,
		WeightCopies: ckCopies, Checkpoint: ck})
}

// ckSolve runs madpipe at memory, validated.
func ckSolve(s *ckSeries, memory int64, ck bool, limit time.Duration) (outcome, int) {
	pr, err := ckProblem(s, memory, ck)
	if err != nil {
		return outcome{err: err.Error()}, 0
	}
	start := time.Now()
	p, err := madpipe.Solve(pr, madpipe.Options{TimeLimit: limit})
	el := time.Since(start)
	var ie *pipeplan.InfeasibleError
	switch {
	case errors.As(err, &ie):
		return outcome{err: "infeasible", solve: el}, 0
	case err != nil:
		return outcome{err: err.Error(), solve: el}, 0
	}
	if err := pipeline.Check(pr, p); err != nil {
		return outcome{err: "invalid plan: " + err.Error(), solve: el}, 0
	}
	n := 0
	for _, st := range p.Stages {
		if st.Recompute != nil {
			n++
		}
	}
	return outcome{ok: true, period: p.Period, solve: el, note: p.Chosen}, n
}

// ckSweep plans a series from the smallest memory of madpipe with checkpointing to the
// memory at which the best contiguous plan without it is faster than one device (20 % more,
// where plain MadPipe pipelines well), in geometric steps.
func ckSweep(s *ckSeries, levels int, limit time.Duration) error {
	plain, err := ckProblem(s, 0, false)
	if err != nil {
		return err
	}
	withCk, err := ckProblem(s, 0, true)
	if err != nil {
		return err
	}
	if s.minPlain, err = madpipe.MinMemory(plain, madpipe.Options{TimeLimit: limit}); err != nil {
		return err
	}
	if s.minCk, err = madpipe.MinMemory(withCk, madpipe.Options{TimeLimit: limit}); err != nil {
		return err
	}
	top, ok := contiguous.MinMemoryAt(plain, plain.TotalWork()*(1-1e-9))
	if !ok {
		top = s.minPlain
	}
	top = max(int64(1.2*float64(top)), s.minPlain)
	lo := min(s.minCk, s.minPlain)
	s.seqTime = s.chain.SumTime()
	for k := range levels {
		m := int64(float64(lo) * math.Pow(float64(top)/float64(lo), float64(k)/float64(levels-1)))
		if len(s.points) > 0 && s.points[len(s.points)-1].memory == m {
			continue
		}
		pt := ckPoint{memory: m}
		pt.plain, _ = ckSolve(s, m, false, limit)
		pt.ck, pt.recomputing = ckSolve(s, m, true, limit)
		pt.rotor = rotorOnOne(s.chain, m)
		s.points = append(s.points, pt)
		fmt.Fprintf(os.Stderr, "%s P=%d %s: madpipe %s, with checkpointing %s (%d recompute), rotor %s\n", s.model, s.gpus,
			fmtBytes(m), pt.plain.summary(), pt.ck.summary(), pt.recomputing, msOrDash(pt.rotor))
	}
	return nil
}

// rotorOnOne returns rotor's makespan for the whole chain on one device of memory bytes
// (ckCopies copies of every weight; the rest for activations), 0 when nothing fits.
func rotorOnOne(c *chainplan.Chain, memory int64) float64 {
	budget := memory - ckCopies*weights(c)
	if budget <= 0 {
		return 0
	}
	p, err := rotor.Solve(c, budget, rotor.Options{})
	if err != nil {
		return 0
	}
	return p.Makespan
}

func msOrDash(t float64) string {
	if t <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f", 1e3*t)
}

// beats reports whether the checkpointing plan is faster than both plain MadPipe and rotor
// on one device (or has a plan where they have none).
func (pt ckPoint) beats() bool {
	if !pt.ck.ok {
		return false
	}
	plainOK := !pt.plain.ok || pt.ck.period < pt.plain.period*(1-1e-9)
	rotorOK := pt.rotor <= 0 || pt.ck.period < pt.rotor*(1-1e-9)
	return plainOK && rotorOK
}

// runCheckpoint runs the comparison on every model and device count and writes its section
// of docs/pipeline-eval.md.
func runCheckpoint(names []string, gpus []int, levels int, limit time.Duration, out string) error {
	start := time.Now()
	var all []*ckSeries
	for _, name := range names {
		c, err := profiles.PipeDream(name)
		if err != nil {
			return err
		}
		for _, p := range gpus {
			s := &ckSeries{model: name, chain: c, gpus: p}
			if err := ckSweep(s, levels, limit); err != nil {
				return fmt.Errorf("%s P=%d: %w", name, p, err)
			}
			all = append(all, s)
		}
	}
	path := filepath.Join(out, "pipeline-eval.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	section := ckReport(all, limit, time.Since(start))
	text := string(doc)
	i, j := strings.Index(text, ckBegin), strings.Index(text, ckEnd)
	if i < 0 || j < i {
		text += "\n" + ckBegin + "\n" + section + ckEnd + "\n"
	} else {
		text = text[:i+len(ckBegin)] + "\n" + section + text[j:]
	}
	return os.WriteFile(path, []byte(text), 0o644)
}

// ckReport writes the section.
func ckReport(all []*ckSeries, limit, took time.Duration) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("## Checkpointing inside stages\n\n")
	p("Generated by `go run ./bench/pipeline -checkpoint` on %s, %s, in %v (it rewrites this section only).\n\n",
		machine.Describe(), time.Now().UTC().Format("2006-01-02"), took.Round(time.Second))
	p("MadPipe without and with checkpointing inside stages (`--checkpoint`: a stage may keep only its input and recompute ")
	p("with rotor at its device's activation budget, docs/pipeline.md), against rotor on one device of the same memory. ")
	p("The runtime model: saved activations, the operations' temporaries counted, %d weight copies (weights, gradients, ", ckCopies)
	p("a momentum buffer); β = 12 GB/s; the MILP limited to %v. Memory runs from the smallest at which MadPipe plans with ", limit)
	p("checkpointing to 1.2× the memory at which the best contiguous plan without it is faster than one device. ")
	p("Periods in ms; \"—\" means no plan; ★: checkpointing inside stages beats both (faster than plain MadPipe or ")
	p("the only pipeline plan, and faster than rotor on one device or where rotor has none).\n\n")
	var points, wins, onlyCk, lower int
	var gains []float64
	for _, s := range all {
		if s.minCk < s.minPlain {
			lower++
		}
		for _, pt := range s.points {
			points++
			if pt.beats() {
				wins++
				if !pt.plain.ok {
					onlyCk++
				} else {
					gains = append(gains, pt.plain.period/pt.ck.period)
				}
			}
		}
	}
	p("**Checkpointing inside stages beats both plain MadPipe and rotor at %d of %d points**: at %d of them plain MadPipe ", wins, points, onlyCk)
	p("has no plan at all, at the other %d it is faster, %.2f× plain MadPipe's speed (geometric mean; largest %.2f×). ",
		len(gains), stats.GeoMean(gains), maxOf(gains))
	p("MadPipe's smallest memory is lower with checkpointing in %d of %d series.\n\n", lower, len(all))
	p("| model | P | smallest memory, plain | with checkpointing | ratio |\n|---|---|---|---|---|\n")
	for _, s := range all {
		p("| %s | %d | %s | %s | %.2f |\n", s.model, s.gpus, fmtBytes(s.minPlain), fmtBytes(s.minCk),
			float64(s.minCk)/float64(s.minPlain))
	}
	p("\n| model | P | memory | madpipe | with checkpointing | recomputing stages | rotor, 1 device | |\n|---|---|---|---|---|---|---|---|\n")
	for _, s := range all {
		for _, pt := range s.points {
			mark := ""
			if pt.beats() {
				mark = "★"
			}
			p("| %s | %d | %s | %s | %s | %d | %s | %s |\n", s.model, s.gpus, fmtBytes(pt.memory), cell(pt.plain), cell(pt.ck),
				pt.recomputing, msOrDash(pt.rotor), mark)
		}
	}
	p("\n")
	return b.String()
}

func maxOf(xs []float64) float64 {
	m := 0.0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}
