package pipesim_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/internal/pipechains"
	"github.com/chainplan/chainplan/planner/pipeline"
	"github.com/chainplan/chainplan/planner/pipesim"
)

// This file is the simulator's oracle: a naive simulation that advances time one tick at a
// time over integer durations, written from the rules of spec §4.5 and §5.4 without sharing
// code with the engine (its own orders, its own dependency checks, its own books kept by
// scanning every micro-batch at every tick), compared with the engine on thousands of
// random cases.

// ocase is one random instance: stage s has forward f[s], backward b[s], output a[s+1]
// bytes (its transfer lasts a[s+1] ticks at β = 1 when links is set), weights w[s]; fx[s]
// and bx[s] are the transient bytes its forward and backward hold while they run, as the
// pipeline model gives them (withModel; none in today's model).
type ocase struct {
	sched      pipesim.Schedule
	f, b       []int
	a, w       []int64
	fx, bx     []int64
	links      bool
	ckpt       []bool
	n, k, cap_ int
}

func (c ocase) String() string {
	return fmt.Sprintf("%s f=%v b=%v a=%v w=%v links=%v ckpt=%v N=%d K=%d cap=%d", c.sched, c.f, c.b, c.a, c.w, c.links, c.ckpt, c.n, c.k, c.cap_)
}

type otask struct{ kind, st, u int } // kind 0 F, 1 B, 2 CF, 3 CB

// oresult is what the naive simulation measured.
type oresult struct {
	start, end   map[otask]int
	makespan     int
	mbEnd        []int
	fwdVer       [][]int
	bwdVer       []int
	peakInflight []int
	peakAct      []int64
	peakVersions []int
	peakDyn      []int64
}

func naive(c ocase) oresult {
	S, N, K := len(c.f), c.n, c.k
	M := N * K
	mbWide := c.sched == pipesim.TiMePReSt
	bUnit := func(m int) int { // the unit of the backward covering micro-batch m
		if mbWide {
			return m / N
		}
		return m
	}
	scale := 1
	if mbWide {
		scale = N
	}
	dur := func(t otask) int {
		switch t.kind {
		case 0:
			return c.f[t.st]
		case 1:
			d := c.b[t.st] * scale
			if c.ckpt[t.st] {
				d += c.f[t.st] * scale
			}
			return d
		case 2:
			return int(c.a[t.st+1])
		}
		return int(c.a[t.st+1]) * scale
	}
	// stored bytes: the stage input plus its layer's saved bytes (= its output here)
	stored := func(s int) int64 { return c.a[s] + c.a[s+1] }
	keep := func(s int) int64 {
		if c.ckpt[s] {
			return c.a[s]
		}
		return stored(s)
	}
	// Orders of the devices (nil for TiMePReSt).
	orders := make([][]otask, S)
	for s := range S {
		var o []otask
		switch c.sched {
		case pipesim.GPipe:
			for k := range K {
				for j := range N {
					o = append(o, otask{0, s, k*N + j})
				}
				for j := N - 1; j >= 0; j-- {
					o = append(o, otask{1, s, k*N + j})
				}
			}
		case pipesim.OneFOneBFlush, pipesim.PipeDreamAsync, pipesim.TwoBW:
			run := N
			if c.sched != pipesim.OneFOneBFlush {
				run = M
			}
			for base := 0; base < M; base += run {
				// Megatron's form: S−s−1 warm-up forwards, then forward-backward pairs.
				warm := min(S-s-1, run)
				for i := range warm {
					o = append(o, otask{0, s, base + i})
				}
				for i := range run - warm {
					o = append(o, otask{0, s, base + warm + i}, otask{1, s, base + i})
				}
				for i := run - warm; i < run; i++ {
					o = append(o, otask{1, s, base + i})
				}
			}
		}
		orders[s] = o
	}
	res := oresult{start: map[otask]int{}, end: map[otask]int{}, mbEnd: make([]int, K),
		fwdVer: make([][]int, K), bwdVer: make([]int, K), peakInflight: make([]int, S),
		peakAct: make([]int64, S), peakVersions: make([]int, S), peakDyn: make([]int64, S)}
	for k := range res.bwdVer {
		res.bwdVer[k] = -1
	}
	ended := func(t otask, now int) bool { e, ok := res.end[t]; return ok && e <= now }
	startedT := func(t otask) bool { _, ok := res.start[t]; return ok }
	ver := make([]int, M)
	// updates done at stage s: mini-batches whose every backward at s has ended
	cur := func(s, now int) int {
		n := 0
		for k := range K {
			all := true
			for j := range N {
				if !ended(otask{1, s, bUnit(k*N + j)}, now) {
					all = false
				}
			}
			if !all {
				break
			}
			n++
		}
		return n
	}
	readyF := func(m, s, now int) bool {
		if s > 0 {
			if c.links && !ended(otask{2, s - 1, m}, now) || !c.links && !ended(otask{0, s - 1, m}, now) {
				return false
			}
		}
		if c.sched == pipesim.TwoBW && cur(s, now) < m/N-1 {
			return false
		}
		return true
	}
	readyB := func(u, s, now int) bool {
		if s == S-1 {
			for m := range M {
				if bUnit(m) == u && !ended(otask{0, s, m}, now) {
					return false
				}
			}
			return true
		}
		if c.links {
			return ended(otask{3, s, u}, now)
		}
		return ended(otask{1, s + 1, u}, now)
	}
	nLinks := 0
	if c.links {
		nLinks = 2 * (S - 1)
	}
	busyUntil := make([]int, S+nLinks)
	running := make([]bool, S+nLinks)
	cursor := make([]int, S)
	total := 2 * M * S
	if mbWide {
		total = M*S + K*S
	}
	if c.links {
		total += (S - 1) * M // CF
		if mbWide {
			total += (S - 1) * K // CB
		} else {
			total += (S - 1) * M
		}
	}
	begin := func(t otask, now int) {
		res.start[t] = now
		if t.kind == 0 && t.st == 0 {
			v := cur(0, now)
			if c.sched == pipesim.TwoBW {
				v = max(0, t.u/N-1)
			}
			ver[t.u] = v
			k := t.u / N
			res.fwdVer[k] = append(res.fwdVer[k], v)
			if !mbWide && (res.bwdVer[k] < 0 || v < res.bwdVer[k]) {
				res.bwdVer[k] = v
			}
		}
		if t.kind == 1 && t.st == S-1 && mbWide {
			res.bwdVer[t.u] = cur(0, now)
		}
	}
	pickDevice := func(s, now int) (otask, bool) {
		if c.sched != pipesim.TiMePReSt {
			if cursor[s] >= len(orders[s]) {
				return otask{}, false
			}
			t := orders[s][cursor[s]]
			if t.kind == 0 && readyF(t.u, s, now) || t.kind == 1 && readyB(t.u, s, now) {
				cursor[s]++
				return t, true
			}
			return otask{}, false
		}
		for k := range K { // any ready backward, the oldest first
			t := otask{1, s, k}
			if !startedT(t) && readyB(k, s, now) {
				return t, true
			}
		}
		for m := range M { // the oldest ready forward
			t := otask{0, s, m}
			if startedT(t) {
				continue
			}
			if s == 0 {
				if m%N == 0 && c.cap_ > 0 && m/N-cur(0, now) >= c.cap_ {
					return otask{}, false
				}
				return t, true
			}
			if readyF(m, s, now) {
				return t, true
			}
			return otask{}, false // forwards reach a stage in order
		}
		return otask{}, false
	}
	pickLink := func(l, now int) (otask, bool) {
		s, kind := l/2, 2+l%2
		best, bestEnd := otask{}, -1
		for u := range M {
			if kind == 3 && mbWide && u >= K {
				break
			}
			t := otask{kind, s, u}
			var prod otask
			if kind == 2 {
				prod = otask{0, s, u}
			} else {
				prod = otask{1, s + 1, u}
			}
			if startedT(t) || !ended(prod, now) {
				continue
			}
			if e := res.end[prod]; bestEnd < 0 || e < bestEnd {
				best, bestEnd = t, e
			}
		}
		return best, bestEnd >= 0
	}
	current := make([]otask, S+nLinks)
	for now := 0; ; now++ {
		for changed := true; changed; {
			changed = false
			for r := range running {
				if running[r] && busyUntil[r] == now {
					running[r] = false
					res.end[current[r]] = now
					res.makespan = now
					changed = true
				}
			}
			for r := range running {
				if running[r] {
					continue
				}
				var t otask
				var ok bool
				if r < S {
					t, ok = pickDevice(r, now)
				} else {
					t, ok = pickLink(r-S, now)
				}
				if ok {
					begin(t, now)
					running[r], current[r], busyUntil[r] = true, t, now+dur(t)
					changed = true
				}
			}
		}
		// The snapshot of this instant.
		for s := range S {
			var act, transient int64
			if running[s] && current[s].kind == 0 {
				transient = c.fx[s]
			} else if running[s] && current[s].kind == 1 {
				transient = c.bx[s] * int64(scale)
			}
			inflight := 0
			held := []int{cur(s, now)}
			for m := range M {
				f, b := otask{0, s, m}, otask{1, s, bUnit(m)}
				if startedT(f) && !ended(b, now) {
					inflight++
					act += keep(s)
					if c.ckpt[s] && startedT(b) {
						act += stored(s) - c.a[s]
					}
				}
				var needs bool
				switch c.sched {
				case pipesim.TiMePReSt:
					needs = startedT(otask{0, 0, m}) && !ended(f, now)
				case pipesim.TwoBW:
					needs = startedT(f) && !ended(b, now)
				default:
					needs = startedT(otask{0, 0, m}) && !ended(b, now)
				}
				if needs && !slices.Contains(held, ver[m]) {
					held = append(held, ver[m])
				}
			}
			res.peakInflight[s] = max(res.peakInflight[s], inflight)
			res.peakAct[s] = max(res.peakAct[s], act)
			res.peakVersions[s] = max(res.peakVersions[s], len(held))
			res.peakDyn[s] = max(res.peakDyn[s], act+transient+int64(len(held)-1)*c.w[s])
		}
		if len(res.end) == total {
			break
		}
		if now > 100000 {
			panic("naive: no progress: " + c.String())
		}
	}
	for k := range K {
		for j := range N {
			res.mbEnd[k] = max(res.mbEnd[k], res.end[otask{1, 0, bUnit(k*N + j)}])
		}
	}
	return res
}

func randomCase(rng *rand.Rand) ocase {
	scheds := []pipesim.Schedule{pipesim.GPipe, pipesim.OneFOneBFlush, pipesim.PipeDreamAsync, pipesim.TwoBW, pipesim.TiMePReSt}
	S := 1 + rng.IntN(4)
	c := ocase{sched: scheds[rng.IntN(len(scheds))], n: 1 + rng.IntN(4), k: 1 + rng.IntN(4), links: rng.IntN(2) == 0}
	if c.sched == pipesim.TwoBW {
		c.n = max(c.n, S-1)
	}
	if c.sched == pipesim.TiMePReSt && rng.IntN(2) == 0 {
		c.cap_ = 1 + rng.IntN(3)
	}
	c.a = []int64{rng.Int64N(4)}
	for range S {
		c.f = append(c.f, 1+rng.IntN(4))
		c.b = append(c.b, 1+rng.IntN(5))
		c.a = append(c.a, rng.Int64N(4))
		c.w = append(c.w, rng.Int64N(50))
		c.ckpt = append(c.ckpt, rng.IntN(4) == 0)
	}
	return c
}

// problem returns c's chain as a pipeline problem, one layer per stage.
func (c ocase) problem(tb testing.TB) *pipeline.Problem {
	tb.Helper()
	f, b := make([]float64, len(c.f)), make([]float64, len(c.b))
	for i := range f {
		f[i], b[i] = float64(c.f[i]), float64(c.b[i])
	}
	pr, err := pipeline.NewProblem(pipechains.Chain(f, b, c.w, c.a), pipeplan.Options{GPUs: len(f), Bandwidth: 1, WeightCopies: 2})
	if err != nil {
		tb.Fatal(err)
	}
	return pr
}

// withModel returns c with the transient bytes the pipeline model gives its stages.
func (c ocase) withModel(tb testing.TB, pr *pipeline.Problem) ocase {
	tb.Helper()
	c.fx, c.bx = make([]int64, len(c.f)), make([]int64, len(c.f))
	for s, st := range stagesOf(len(c.f)) {
		cost, err := pr.Cost(st)
		if err != nil {
			tb.Fatal(err)
		}
		c.fx[s], c.bx[s] = cost.FwdExtra, cost.BwdExtra
	}
	return c
}

func (c ocase) simulate(tb testing.TB, pr *pipeline.Problem) *pipesim.Result {
	tb.Helper()
	var ck []int
	for i, on := range c.ckpt {
		if on {
			ck = append(ck, i)
		}
	}
	su, err := pipesim.NewSetup(pr, stagesOf(len(c.f)), pipesim.SetupOptions{Links: c.links, Checkpointed: ck})
	if err != nil {
		tb.Fatal(err)
	}
	r, err := pipesim.Simulate(su, pipesim.Options{Schedule: c.sched, Microbatches: c.n, Minibatches: c.k, MaxInflight: c.cap_, Record: true})
	if err != nil {
		tb.Fatalf("%v: %v", c, err)
	}
	return r
}

// TestAgainstNaive compares the engine with the naive simulation on 3,000 seeded random
// cases of every schedule but periodic (600 with -short): every task's start and end, the
// makespan, each mini-batch's end and weight versions, and each stage's peaks.
func TestAgainstNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 1))
	for i := range cases(3000) {
		compareWithNaive(t, fmt.Sprintf("case %d", i), randomCase(rng))
	}
}

// compareWithNaive simulates c with the engine and with naive and fails on any difference.
func compareWithNaive(t *testing.T, name string, c ocase) {
	t.Helper()
	pr := c.problem(t)
	c = c.withModel(t, pr)
	got, want := c.simulate(t, pr), naive(c)
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s %v: %s", name, c, fmt.Sprintf(format, args...))
	}
	if int(got.Makespan) != want.makespan {
		fail("makespan %v, naive %d", got.Makespan, want.makespan)
	}
	kinds := map[string]int{"F": 0, "B": 1, "CF": 2, "CB": 3}
	seen := 0
	for _, sp := range got.Timeline {
		if sp.Kind == "R" {
			continue
		}
		u := sp.Minibatch*c.n + sp.Microbatch
		if sp.Microbatch < 0 {
			u = sp.Minibatch
		}
		ot := otask{kinds[sp.Kind], sp.Stage, u}
		s, ok := want.start[ot]
		if sp.Kind == "B" && c.ckpt[sp.Stage] {
			s += c.f[sp.Stage] * map[bool]int{true: c.n, false: 1}[sp.Microbatch < 0]
		}
		if !ok || float64(s) != sp.Start || float64(want.end[ot]) != sp.End {
			fail("%s%d of unit %d at [%v, %v), naive [%d, %d) (known %v)", sp.Kind, sp.Stage, u, sp.Start, sp.End, s, want.end[ot], ok)
		}
		seen++
	}
	if seen != len(want.end) {
		fail("%d tasks, naive %d", seen, len(want.end))
	}
	for k, m := range got.PerMinibatch {
		if int(m.End) != want.mbEnd[k] || !slices.Equal(m.ForwardVersions, want.fwdVer[k]) || m.BackwardVersion != want.bwdVer[k] {
			fail("mini-batch %d: end %v versions %v/%d, naive %d %v/%d", k+1, m.End, m.ForwardVersions, m.BackwardVersion,
				want.mbEnd[k], want.fwdVer[k], want.bwdVer[k])
		}
	}
	for s, x := range got.PerStage {
		if x.PeakInflight != want.peakInflight[s] || x.PeakActivationBytes != want.peakAct[s] || x.WeightVersions != want.peakVersions[s] {
			fail("stage %d: in flight %d, bytes %d, versions %d; naive %d, %d, %d", s, x.PeakInflight, x.PeakActivationBytes,
				x.WeightVersions, want.peakInflight[s], want.peakAct[s], want.peakVersions[s])
		}
		if d := got.PerDevice[s]; d.PeakBytes-d.StaticBytes != want.peakDyn[s] {
			fail("device %d: %d bytes above static, naive %d", s, d.PeakBytes-d.StaticBytes, want.peakDyn[s])
		}
	}
}
