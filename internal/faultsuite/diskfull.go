package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// fullDisk is a small tmpfs mounted for the full-disk cases (the suite runs as root).
type fullDisk struct {
	dir string
}

// mountSmall mounts a tmpfs of size bytes at a new folder under the scratch folder.
func (e *env) mountSmall(name string, size int64) (*fullDisk, error) {
	dir := filepath.Join(e.dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0755", size)); err != nil {
		return nil, fmt.Errorf("mount a %d-byte tmpfs at %s: %w", size, dir, err)
	}
	return &fullDisk{dir: dir}, nil
}

func (d *fullDisk) unmount() error {
	return syscall.Unmount(d.dir, syscall.MNT_DETACH)
}

// fill writes a filler file until the disk has at most leave bytes free.
func (d *fullDisk) fill(leave int64) error {
	f, err := os.OpenFile(filepath.Join(d.dir, "filler"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	chunk := make([]byte, 4096)
	for {
		var st syscall.Statfs_t
		if err := syscall.Statfs(d.dir, &st); err != nil {
			return err
		}
		if int64(st.Bavail)*st.Bsize <= leave {
			return nil
		}
		if _, err := f.Write(chunk); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return nil
			}
			return err
		}
	}
}

// free removes the filler file.
func (d *fullDisk) free() error { return os.Remove(filepath.Join(d.dir, "filler")) }

// sqliteFullDisk runs commands on a SQLite store whose disk is full: writes fail with
// status 2 and a message naming the file, reads still work, the store keeps what it held
// (integrity check, every run and plan as before), and once space is freed the failed
// ingest runs again and stores its file.
func (e *env) sqliteFullDisk(ctx context.Context) ([]outcome, error) {
	disk, err := e.mountSmall("full-sqlite", 4<<20)
	if err != nil {
		return nil, err
	}
	defer disk.unmount()
	t := target{sqliteBackend, filepath.Join(disk.dir, "chainplan.db")}
	return e.fullDiskCases(ctx, t, disk.fill, disk.free, filepath.Join(disk.dir, "new.db"))
}

// fullDiskCases runs the full-disk commands on t: fill makes its disk full (leaving at
// most the given bytes free), free gives the space back; newDB, when not empty, is a
// database to create on the full disk. With a little space left (64 KiB) a large ingest
// fails and small writes and reads may run; with none, every command that needs to
// write (SQLite's reads included: they create the -shm index of the log) fails. Each
// failure must be status 2 naming the database and the full disk; afterwards the store
// holds what it held, and with the space back the failed ingest succeeds.
func (e *env) fullDiskCases(ctx context.Context, t target, fill func(int64) error, free func() error, newDB string) ([]outcome, error) {
	var base []profileFile
	for _, shape := range [][2]int{{40, 10}, {10, 4}} {
		f, err := e.profile(shape[0], shape[1])
		if err != nil {
			return nil, err
		}
		if _, err := e.must(t, "ingest", f.path); err != nil {
			return nil, err
		}
		base = append(base, f)
	}
	if _, err := e.must(t, "solve", "--run", "1", "--budget", "min"); err != nil {
		return nil, err
	}
	before, err := e.snapshot(ctx, t)
	if err != nil {
		return nil, err
	}
	big, err := e.profile(300, 40) // about 12,000 rows: more than the disk has left
	if err != nil {
		return nil, err
	}
	var out []outcome
	runOn := func(label string, cmdTarget target, args ...string) (runResult, error) {
		res, err := e.execute(ctx, e.command(cmdTarget, args...), cmdTarget, never, false)
		if err != nil {
			return res, err
		}
		o := judge(label, strings.Join(args, " "), cmdTarget.where, res)
		o.command = strings.ReplaceAll(o.command, e.dir, "$TMP")
		o.message = strings.ReplaceAll(o.message, e.dir, "$TMP")
		if res.exit != 0 {
			// A command that failed must say the disk is full.
			o.ok = o.ok && (strings.Contains(res.stderr, "full") || strings.Contains(strings.ToLower(res.stderr), "no space"))
		}
		out = append(out, o)
		return res, nil
	}
	reads := [][]string{{"profiles"}, {"show", "1"}, {"sql", "SELECT count(*) FROM measurements"}}
	writes := [][]string{
		{"solve", "--run", "1", "--budget", "min"},
		{"pipeline", "--run", "1", "--algo", "contiguous", "--gpus", "2", "--memory", "min", "--bandwidth", "12GB/s"},
	}
	if err := fill(64 << 10); err != nil {
		return nil, fmt.Errorf("fill the disk: %w", err)
	}
	label := t.backend + ", 64 KiB free"
	ingest, err := runOn(label, t, "ingest", big.path)
	if err != nil {
		return nil, err
	}
	if ingest.exit == 0 {
		out[len(out)-1].ok = false
		out[len(out)-1].message = "the ingest fitted: the disk was not full enough"
	}
	for _, args := range append(append([][]string{}, writes...), reads...) {
		if _, err := runOn(label, t, args...); err != nil {
			return nil, err
		}
	}
	if err := fill(0); err != nil {
		return nil, fmt.Errorf("fill the disk: %w", err)
	}
	label = t.backend + ", no space left"
	small, err := e.profile(10, 4)
	if err != nil {
		return nil, err
	}
	for _, args := range append(append([][]string{{"ingest", small.path}}, writes...), reads...) {
		if _, err := runOn(label, t, args...); err != nil {
			return nil, err
		}
	}
	if newDB != "" {
		if _, err := runOn(label+", new file", target{sqliteBackend, newDB}, "ingest", base[1].path); err != nil {
			return nil, err
		}
	}
	if err := free(); err != nil {
		return nil, err
	}
	// Nothing already stored was lost, nothing partial was left (read with the space
	// back: on a full disk SQLite cannot even open the file).
	after, err := e.snapshot(ctx, t)
	check := outcome{store: t.backend + ", space freed", command: "(check) integrity; every run and plan as before"}
	if err == nil {
		err = lost(before, after)
	}
	if err == nil && after.has(big.sha256) {
		err = errors.New("the failed ingest left its run")
	}
	check.ok, check.message = err == nil, "(succeeded)"
	if err != nil {
		check.exit, check.message = 1, err.Error()
	}
	out = append(out, check)
	res, err := runOn(t.backend+", space freed", t, "ingest", big.path)
	if err != nil {
		return nil, err
	}
	final, err := e.snapshot(ctx, t)
	if res.exit != 0 || err != nil || !final.has(big.sha256) || lost(after, final) != nil {
		out[len(out)-1].ok = false
	}
	return out, nil
}
