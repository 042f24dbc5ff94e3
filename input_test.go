//go:build unix

package chainplan_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chainplan/chainplan"
)

// TestReadInputRefuses: a directory, a named pipe, an empty file and a missing one are
// refused with the path, what it is and what was wanted; a named pipe without a writer is
// refused at once rather than blocking the open (issue 33).
func TestReadInputRefuses(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.json")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	const want = "a chain file (chainplan.chain/v1 JSON)"
	for _, tt := range []struct {
		path, is string
		notExist bool
	}{
		{dir, "is a directory", false},
		{fifo, "is a named pipe (FIFO), not a regular file", false},
		{empty, "is empty", false},
		{filepath.Join(dir, "nope.json"), "no such file or directory", true},
	} {
		done := make(chan error, 1)
		go func() { _, err := chainplan.ReadInput(tt.path, want); done <- err }()
		var err error
		select {
		case err = <-done:
		case <-time.After(time.Minute):
			t.Fatalf("ReadInput(%s) blocked", tt.path)
		}
		msg := tt.path + ": " + tt.is + "; want " + want
		if !errors.Is(err, chainplan.ErrInputFile) || err.Error() != msg || errors.Is(err, os.ErrNotExist) != tt.notExist {
			t.Errorf("ReadInput(%s) = %v, want %q (ErrInputFile; ErrNotExist %v)", tt.path, err, msg, tt.notExist)
		}
	}
	// The readers of chains, bundles and plans go through it.
	for name, read := range map[string]func(string) error{
		"ReadChain":      func(p string) error { _, err := chainplan.ReadChain(p); return err },
		"ReadMultiChain": func(p string) error { _, err := chainplan.ReadMultiChain(p); return err },
		"ReadPlan":       func(p string) error { _, err := chainplan.ReadPlan(p); return err },
	} {
		if err := read(dir); !errors.Is(err, chainplan.ErrInputFile) || !strings.HasPrefix(err.Error(), dir+": is a directory; want ") {
			t.Errorf("%s(directory) = %v", name, err)
		}
	}
	data, err := chainplan.ReadInput(filepath.Join("examples", "tiny.json"), want)
	if err != nil || len(data) == 0 {
		t.Fatalf("a regular file: %d bytes, %v", len(data), err)
	}
}
