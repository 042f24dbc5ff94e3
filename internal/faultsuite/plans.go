package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
)

// planLoad kills the commands that record a plan of a stored run: `chainplan solve --run`
// (a new plan each time) or `chainplan pipeline --run` (a new request each trial; the
// same request run again reuses the stored plan instead of recording a second one).
type planLoad struct {
	pipeline bool
	t        target
	runs     []string // the stored runs' ids
	shas     map[string]string
	stages   []int // the stages of the profiles stored at setup
}

func (w *planLoad) name() string {
	if w.pipeline {
		return "pipeline --run"
	}
	return "solve --run"
}

func (w *planLoad) setup(ctx context.Context, e *env, backend string) error {
	t, err := e.freshTarget(ctx, backend, "plans-"+map[bool]string{false: "solve", true: "pipeline"}[w.pipeline])
	if err != nil {
		return err
	}
	w.t, w.shas = t, map[string]string{}
	for _, n := range w.stages {
		f, err := e.profile(n, 3)
		if err != nil {
			return err
		}
		if _, err := e.must(t, "ingest", f.path); err != nil {
			return err
		}
		w.runs = append(w.runs, strconv.Itoa(len(w.runs)+1))
		w.shas[w.runs[len(w.runs)-1]] = f.sha256
	}
	return nil
}

func (w *planLoad) prepare(_ context.Context, e *env, i int) (*trial, error) {
	run := w.runs[i%len(w.runs)]
	var args []string
	if w.pipeline {
		// A bandwidth of its own makes each trial's request new.
		args = []string{"pipeline", "--run", run, "--algo", "contiguous", "--gpus", strconv.Itoa(2 + i%3),
			"--memory", "min", "--bandwidth", fmt.Sprintf("%dMB/s", 10000+i)}
	} else {
		// rotor at the smallest budget it plans at: always feasible, the same work each
		// trial (the kill moments are spread over its measured duration).
		args = []string{"solve", "--run", run, "--budget", "min", "--algo", "rotor"}
	}
	t, sha := w.t, w.shas[run]
	return &trial{
		target: t,
		cmd:    func() *exec.Cmd { return e.command(t, args...) },
		afterKill: func(before, after state, res runResult) (landing, error) {
			fresh := newPlans(before, after)
			errs := []error{checkAcknowledged(res, after)}
			if len(fresh) > 1 {
				errs = append(errs, fmt.Errorf("%d plans recorded by one killed command", len(fresh)))
			}
			for _, id := range fresh {
				if after.plans[id].run != sha {
					errs = append(errs, fmt.Errorf("plan %d recorded on another run", id))
				}
			}
			if len(fresh) == 0 {
				return landedNothing, errors.Join(errs...)
			}
			return landedAll, errors.Join(errs...)
		},
		done: func(before, mid, after state, res runResult) error {
			id := recordedPlan(res.stderr)
			p, ok := after.plans[id]
			if id == 0 || !ok || p.run != sha {
				return fmt.Errorf("the command reported plan %d (stored: %v) of run %s; stderr: %s", id, ok, run, res.stderr)
			}
			fresh := newPlans(mid, after)
			if len(fresh) > 1 || len(fresh) == 1 && fresh[0] != id {
				return fmt.Errorf("plans %v appeared, the command reported %d", fresh, id)
			}
			if w.pipeline {
				// One request, one plan: a plan the killed process committed is reused.
				if n := len(newPlans(before, after)); n != 1 {
					return fmt.Errorf("%d plans stored for one pipeline request, want 1", n)
				}
			}
			return nil
		},
	}, nil
}
