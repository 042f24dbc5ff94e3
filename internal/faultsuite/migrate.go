package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
)

// migrateLoad kills `chainplan migrate-store` copying a SQLite store into a store of the
// backend. The source grows before every trial (two new runs, one new plan of an old
// run) and the destination keeps what earlier trials copied, so that each copy adds runs
// and plans to a store that holds some already; every freshEvery-th trial copies into a
// new destination (its creation and migrations, and the whole history in one go).
type migrateLoad struct {
	backend    string
	src        target
	dst        target
	freshEvery int
	runs       int // runs in the source
}

func (w *migrateLoad) name() string { return "migrate-store" }

func (w *migrateLoad) setup(ctx context.Context, e *env, backend string) error {
	w.backend = backend
	w.src = target{sqliteBackend, filepath.Join(e.dir, "migrate-src-"+backend+".db")}
	return w.grow(e, 4)
}

// grow adds n new runs to the source and a plan of one of its older runs.
func (w *migrateLoad) grow(e *env, n int) error {
	for range n {
		f, err := e.profile(30+w.runs%40, 5)
		if err != nil {
			return err
		}
		if _, err := e.must(w.src, "ingest", f.path); err != nil {
			return err
		}
		w.runs++
	}
	_, err := e.must(w.src, "solve", "--run", fmt.Sprint(1+w.runs%(w.runs-n+1)), "--budget", "min")
	return err
}

func (w *migrateLoad) prepare(ctx context.Context, e *env, i int) (*trial, error) {
	if i > 0 {
		if err := w.grow(e, 2); err != nil {
			return nil, err
		}
	}
	fresh := i%w.freshEvery == 0
	if fresh {
		t, err := e.freshTarget(ctx, w.backend, fmt.Sprintf("migrate-dst-%d", i))
		if err != nil {
			return nil, err
		}
		w.dst = t
	}
	db, err := e.open(ctx, w.src)
	if err != nil {
		return nil, err
	}
	src, err := readState(ctx, db)
	db.Close()
	if err != nil {
		return nil, fmt.Errorf("the source: %w", err)
	}
	srcT, dst := w.src, w.dst
	// The source must come out of every kill as it went in.
	checkSource := func() error {
		db, err := e.open(ctx, srcT)
		if err != nil {
			return fmt.Errorf("the source after the kill: %w", err)
		}
		defer db.Close()
		now, err := readState(ctx, db)
		if err == nil && (len(now.runs) != len(src.runs) || len(now.plans) != len(src.plans)) {
			err = errors.New("the copy changed its source")
		}
		return errors.Join(err, lost(src, now))
	}
	return &trial{
		target: dst,
		fresh:  fresh,
		cmd:    func() *exec.Cmd { return e.commandNoDB("migrate-store", "--from", srcT.where, "--to", dst.where) },
		afterKill: func(before, after state, _ runResult) (landing, error) {
			errs := []error{checkSource()}
			for sha, r := range after.runs {
				s, ok := src.runs[sha]
				if !ok || !r.sameContent(s) {
					errs = append(errs, fmt.Errorf("run %d of the destination is not the source's (%+v, %+v)", r.id, r, s))
					continue
				}
				// One transaction per run: a run and what hangs off it move together.
				if got := after.plansOf(sha); !maps.Equal(got, src.plansOf(sha)) && !maps.Equal(got, before.plansOf(sha)) {
					errs = append(errs, fmt.Errorf("run %d holds %d plans, the source's run %d, before the copy %d",
						r.id, len(got), len(src.plansOf(sha)), len(before.plansOf(sha))))
				}
			}
			switch {
			case len(after.runs) == len(before.runs) && len(after.plans) == len(before.plans):
				return landedNothing, errors.Join(errs...)
			case mirrors(after, src) == nil:
				return landedAll, errors.Join(errs...)
			}
			return landedPart, errors.Join(errs...)
		},
		done: func(_, _, after state, _ runResult) error {
			return errors.Join(checkSource(), mirrors(after, src))
		},
	}, nil
}

// sameContent compares two runs of different stores (their ids differ).
func (r runState) sameContent(o runState) bool {
	o.id = r.id
	return r.same(o)
}

// mirrors checks that dst holds exactly src's runs, each with its plans.
func mirrors(dst, src state) error {
	var errs []error
	if len(dst.runs) != len(src.runs) || len(dst.plans) != len(src.plans) {
		errs = append(errs, fmt.Errorf("%d runs and %d plans, the source %d and %d",
			len(dst.runs), len(dst.plans), len(src.runs), len(src.plans)))
	}
	for sha, s := range src.runs {
		d, ok := dst.runs[sha]
		if !ok || !d.sameContent(s) || !maps.Equal(dst.plansOf(sha), src.plansOf(sha)) {
			errs = append(errs, fmt.Errorf("run %d of the source is missing or differs (present: %v)", s.id, ok))
		}
	}
	return errors.Join(errs...)
}
