package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
)

// ingestLoad kills `chainplan ingest` of three new profile files (a large, a medium and a
// small one: three transactions) into a store that grows trial after trial; every
// freshEvery-th trial starts on a new store, so that kills also land in the creation of
// the file or schema and its migrations.
type ingestLoad struct {
	backend    string
	t          target
	freshEvery int
	shapes     [][2]int // stages, reps of each file
}

func newIngestLoad(shapes [][2]int) *ingestLoad {
	return &ingestLoad{freshEvery: 8, shapes: shapes}
}

func (w *ingestLoad) name() string { return "ingest" }

func (w *ingestLoad) setup(_ context.Context, _ *env, backend string) error {
	w.backend = backend
	return nil
}

func (w *ingestLoad) prepare(ctx context.Context, e *env, i int) (*trial, error) {
	fresh := i%w.freshEvery == 0
	if fresh {
		t, err := e.freshTarget(ctx, w.backend, fmt.Sprintf("ingest-%d", i))
		if err != nil {
			return nil, err
		}
		w.t = t
	}
	var files []profileFile
	for _, s := range w.shapes {
		f, err := e.profile(s[0], s[1])
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	args := []string{"ingest"}
	for _, f := range files {
		args = append(args, f.path)
	}
	t := w.t
	return &trial{
		target: t,
		fresh:  fresh,
		cmd:    func() *exec.Cmd { return e.command(t, args...) },
		afterKill: func(before, after state, res runResult) (landing, error) {
			var errs []error
			added := newRuns(before, after)
			for _, sha := range added {
				if !slices.ContainsFunc(files, func(f profileFile) bool { return f.sha256 == sha }) {
					errs = append(errs, fmt.Errorf("a run nobody ingested appeared (%s)", sha))
				}
			}
			for path, isNew := range ingested(res.stdout) {
				f := files[slices.IndexFunc(files, func(f profileFile) bool { return f.path == path })]
				if isNew && !after.has(f.sha256) {
					errs = append(errs, fmt.Errorf("%s was reported stored before the kill and is missing", path))
				}
			}
			switch len(added) {
			case 0:
				return landedNothing, errors.Join(errs...)
			case len(files):
				return landedAll, errors.Join(errs...)
			}
			return landedPart, errors.Join(errs...)
		},
		done: func(before, mid, after state, res runResult) error {
			var errs []error
			if got, want := len(after.runs), len(before.runs)+len(files); got != want {
				errs = append(errs, fmt.Errorf("%d runs after the command, want %d", got, want))
			}
			report := ingested(res.stdout)
			for _, f := range files {
				r, ok := after.runs[f.sha256]
				switch {
				case !ok:
					errs = append(errs, fmt.Errorf("%s is not stored", f.path))
				case r.stages != int64(f.stages+1) || r.measurements != int64(f.rows()):
					errs = append(errs, fmt.Errorf("%s stored with %d stages and %d rows, want %d and %d",
						f.path, r.stages, r.measurements, f.stages+1, f.rows()))
				}
				if isNew, ok := report[f.path]; !ok || isNew == mid.has(f.sha256) {
					errs = append(errs, fmt.Errorf("ingest reported %s as new=%v (reported: %v), but the store held it: %v",
						f.path, isNew, ok, mid.has(f.sha256)))
				}
			}
			return errors.Join(errs...)
		},
	}, nil
}
