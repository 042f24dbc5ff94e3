package main

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
)

// landing says how much of a killed command's work the store kept: nothing, part of it
// (a command of several transactions killed between them), or all of it (killed after
// its last commit).
type landing int

const (
	landedNothing landing = iota
	landedPart
	landedAll
)

// A workload is one command the suite kills again and again on one backend.
type workload interface {
	// name is the command as the figures show it.
	name() string
	// setup prepares what every trial needs (stores, inputs).
	setup(ctx context.Context, e *env, backend string) error
	// prepare readies trial i: new inputs, a fresh store now and then.
	prepare(ctx context.Context, e *env, i int) (*trial, error)
}

// trial is one command to kill and then run to completion, with its checks. State
// checks common to every workload (nothing partial, nothing lost) run around them.
type trial struct {
	target target           // the store the command writes: probed and checked
	fresh  bool             // target is new: nothing to read before the command (reading would create it)
	cmd    func() *exec.Cmd // a new process running the command
	// afterKill checks the store after the killed process (before: the state it started
	// from) and says where the kill landed.
	afterKill func(before, after state, res runResult) (landing, error)
	// done checks the store after the command ran to completion (mid: the state the
	// run started from, after any killed process; res: the run's output).
	done func(before, mid, after state, res runResult) error
}

var (
	ingestLine   = regexp.MustCompile(`(?m)^run (\d+)\s+(new|existing)\s+.*\s(\S+)$`)
	recordedLine = regexp.MustCompile(`recorded as plan (\d+) of run (\d+)`)
	reusedLine   = regexp.MustCompile(`reused plan (\d+)`)
)

// ingested returns the files ingest reported, by path, and whether each was new.
func ingested(stdout string) map[string]bool {
	out := map[string]bool{}
	for _, m := range ingestLine.FindAllStringSubmatch(stdout, -1) {
		out[m[3]] = m[2] == "new"
	}
	return out
}

// recordedPlan returns the plan id a command reported recording (or reusing), 0 if none.
func recordedPlan(stderr string) int64 {
	for _, re := range []*regexp.Regexp{recordedLine, reusedLine} {
		if m := re.FindStringSubmatch(stderr); m != nil {
			id, _ := strconv.ParseInt(m[1], 10, 64)
			return id
		}
	}
	return 0
}

// checkAcknowledged checks that a plan the killed process reported recording is stored.
func checkAcknowledged(res runResult, after state) error {
	if id := recordedPlan(res.stderr); id != 0 {
		if _, ok := after.plans[id]; !ok {
			return fmt.Errorf("plan %d was reported recorded before the kill and is missing", id)
		}
	}
	return nil
}
