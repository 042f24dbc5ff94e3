package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// killFigures are one group's figures: a command killed again and again on one backend.
type killFigures struct {
	command, backend string
	trials           int     // commands run (calibration runs included)
	kills            int     // SIGKILLs that reached a running process
	exitedFirst      int     // processes that had exited when their kill was due
	inWrite          int     // kills the probe saw land inside a write transaction
	aimed            [3]int  // kills aimed before, inside and after the write window
	landed           [3]int  // kills after which the store held nothing, part or all of the command's work
	converged        int     // re-runs that exited 0 with the expected store
	durationMS       float64 // the command's median duration, uninterrupted
	windowMS         [2]float64
	failures         []string
	elapsed          time.Duration
}

// calibration says how many runs measure a command before the kills: the first watched
// runs are uninterrupted and watched, to measure when the command's write transactions
// begin and end; the next plain runs are uninterrupted and not watched, since watching
// (polling the probe) slows the command, and their duration rescales the window.
type calibration struct{ watched, plain int }

// killGroup runs w on backend: calibration runs, then trials until kills processes were
// killed (a trial whose process exits before its kill counts as a trial, not a kill; at
// most 5 trials per kill). The write window is measured as shares of each watched run's
// duration and placed in the median duration of the runs not watched and not killed.
func (e *env) killGroup(ctx context.Context, w workload, backend string, kills int, cal calibration, seed uint64) killFigures {
	start := time.Now()
	fig := killFigures{command: w.name(), backend: backend}
	fail := func(format string, args ...any) {
		fig.failures = append(fig.failures, fmt.Sprintf(format, args...))
	}
	if err := w.setup(ctx, e, backend); err != nil {
		fail("setup: %v", err)
		return fig
	}
	rng := rand.New(rand.NewPCG(seed, uint64(len(w.name()))<<8|uint64(len(backend))))
	watchedRuns, calibrationRuns := cal.watched, cal.watched+cal.plain
	var plain []time.Duration
	var froms, tos []float64 // the write window of each watched run, as shares of its duration
	var d, from, to time.Duration
	for i := 0; fig.kills < kills && i < calibrationRuns+5*kills; i++ {
		tr, err := w.prepare(ctx, e, i)
		if err != nil {
			fail("trial %d: prepare: %v", i, err)
			break
		}
		delay, stratum, watch := never, -1, i < watchedRuns
		if i >= calibrationRuns {
			d = median(plain)
			if len(froms) > 0 {
				from, to = time.Duration(medianOf(froms)*float64(d)), time.Duration(medianOf(tos)*float64(d))
			}
		}
		if i >= calibrationRuns {
			stratum = (i - calibrationRuns) % 3
			delay = drawDelay(rng, stratum, d, from, to)
		}
		res, err := e.trial(ctx, tr, delay, watch)
		fig.trials++
		switch {
		case watch:
			if r := res.first; r.writeTo > 0 {
				froms = append(froms, float64(r.writeFrom)/float64(r.elapsed))
				tos = append(tos, float64(r.writeTo)/float64(r.elapsed))
			}
		case !res.first.killed:
			// Runs that were not killed, calibration or exited before their kill, keep the
			// duration up to date as the machine's load changes.
			plain = append(plain, res.first.elapsed)
		}
		if res.first.killed {
			fig.kills++
			fig.aimed[stratum]++
			fig.landed[res.landing]++
			if res.first.inWrite {
				fig.inWrite++
			}
		} else if i >= calibrationRuns {
			fig.exitedFirst++
		}
		if err != nil {
			fail("trial %d (kill after %v, killed: %v): %v", i, delay, res.first.killed, err)
			continue
		}
		if res.first.killed {
			fig.converged++
		}
	}
	fig.durationMS = ms(d)
	fig.windowMS = [2]float64{ms(from), ms(to)}
	fig.elapsed = time.Since(start)
	return fig
}

// drawDelay returns when to kill: uniformly before the write window (stratum 0), inside
// it (1), or after it until just past the command's duration (2). Without a window seen,
// anywhere in the duration.
func drawDelay(rng *rand.Rand, stratum int, d, from, to time.Duration) time.Duration {
	lo, hi := time.Duration(0), d+d/20
	if to > 0 {
		switch stratum {
		case 0:
			hi = from
		case 1:
			lo, hi = from, to
		default:
			lo = to
		}
	}
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(rng.Int64N(int64(hi-lo)))
}

// trialResult is what one trial did.
type trialResult struct {
	first   runResult // the run that was to be killed
	landing landing
}

// trial runs tr's command, killed after delay (never: not killed), checks the store, and
// after a kill runs the command again to completion and checks the store again.
func (e *env) trial(ctx context.Context, tr *trial, delay time.Duration, watch bool) (trialResult, error) {
	var out trialResult
	before := state{runs: map[string]runState{}, plans: map[int64]planState{}}
	if !tr.fresh {
		var err error
		if before, err = e.snapshot(ctx, tr.target); err != nil {
			return out, fmt.Errorf("before the command: %w", err)
		}
	}
	res, err := e.execute(ctx, tr.cmd(), tr.target, delay, watch)
	out.first = res
	if err != nil {
		return out, err
	}
	var errs []error
	mid := before
	if res.killed {
		after, err := e.snapshot(ctx, tr.target)
		if err != nil {
			return out, fmt.Errorf("after the kill: %w", err)
		}
		land, err := tr.afterKill(before, after, res)
		out.landing = land
		errs = append(errs, lost(before, after), err)
		mid = after
		if res, err = e.execute(ctx, tr.cmd(), tr.target, never, false); err != nil {
			return out, errors.Join(append(errs, fmt.Errorf("re-run: %w", err))...)
		}
	}
	errs = append(errs, cleanExit(res))
	after, err := e.snapshot(ctx, tr.target)
	if err != nil {
		return out, errors.Join(append(errs, fmt.Errorf("after the command: %w", err))...)
	}
	errs = append(errs, lost(mid, after), tr.done(before, mid, after, res))
	return out, errors.Join(errs...)
}

// cleanExit checks that a command run to completion succeeded and said nothing of a lock
// or a crash.
func cleanExit(res runResult) error {
	if res.exit != 0 {
		return fmt.Errorf("exit %d: %s", res.exit, firstLine(res.stderr))
	}
	for _, bad := range []string{"locked", "panic", "goroutine "} {
		if strings.Contains(res.stderr, bad) {
			return fmt.Errorf("standard error mentions %q: %s", bad, firstLine(res.stderr))
		}
	}
	return nil
}

// snapshot opens t as the next chainplan process would and reads its state.
func (e *env) snapshot(ctx context.Context, t target) (state, error) {
	db, err := e.open(ctx, t)
	if err != nil {
		return state{}, err
	}
	defer db.Close()
	return readState(ctx, db)
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func medianOf(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
