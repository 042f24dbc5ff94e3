package main

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"syscall"
	"time"
)

// runResult is how one chainplan process ended.
type runResult struct {
	killed  bool // SIGKILL reached the process while it ran (its wait status says so)
	inWrite bool // the probe saw it inside a write transaction just before the kill
	exit    int  // the exit status when it was not killed
	stdout  string
	stderr  string
	delay   time.Duration // from start to the kill (0: no kill was sent)
	elapsed time.Duration // from start to exit
	// The write window a calibration run saw (from start; zero when never seen).
	writeFrom, writeTo time.Duration
}

// never is the delay of a run that is not killed.
const never = time.Duration(-1)

// execute starts cmd and, when delay >= 0, probes where it is and kills it with SIGKILL
// after delay. With watch set (calibration), it polls the probe for the whole run and
// records the first and last moment it saw a write transaction.
func (e *env) execute(ctx context.Context, cmd *exec.Cmd, t target, delay time.Duration, watch bool) (runResult, error) {
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return runResult{}, err
	}
	pid := cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	res := runResult{delay: delay}
	var waitErr error
	wait := func() error {
		select {
		case waitErr = <-done:
			return nil
		case <-time.After(5 * time.Minute):
			_ = cmd.Process.Kill()
			<-done
			return errors.New("chainplan ran for over 5 minutes (hung on a lock?)")
		}
	}
	switch {
	case watch:
		for waiting := true; waiting; {
			select {
			case waitErr = <-done:
				waiting = false
			default:
				if e.inWrite(ctx, t, pid) {
					at := time.Since(start)
					if res.writeFrom == 0 {
						res.writeFrom = at
					}
					res.writeTo = at
				}
				time.Sleep(200 * time.Microsecond)
			}
		}
	case delay >= 0:
		timer := time.NewTimer(delay)
		select {
		case waitErr = <-done:
			timer.Stop()
		case <-timer.C:
			res.inWrite = e.inWrite(ctx, t, pid)
			_ = cmd.Process.Signal(syscall.SIGKILL) // a process that just exited is a zombie until reaped: no error
			if err := wait(); err != nil {
				return res, err
			}
		}
	default:
		if err := wait(); err != nil {
			return res, err
		}
	}
	res.elapsed = time.Since(start)
	res.stdout, res.stderr = out.String(), errb.String()
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	res.killed = ws.Signaled() && ws.Signal() == syscall.SIGKILL
	if !res.killed {
		res.inWrite = false
		res.exit = cmd.ProcessState.ExitCode()
	}
	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) {
		return res, waitErr
	}
	return res, nil
}
