//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runBounded is run with a deadline, so that a command blocked on a named pipe fails the
// test instead of hanging it.
func runBounded(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	type result struct {
		code     int
		out, err string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errs := run(t, args...)
		done <- result{code, out, errs}
	}()
	select {
	case r := <-done:
		return r.code, r.out, r.err
	case <-time.After(2 * time.Minute):
		t.Fatalf("chainplan %s did not return (blocked on a named pipe?)", strings.Join(args, " "))
	}
	return 0, "", ""
}

// TestInputsThatAreNoFiles: a directory, a named pipe and an empty file given where a
// file is read exit 2 with the path and what was wanted, and a named pipe is refused
// without waiting for a writer (issue 33: a directory as --chain exited 1 with "read
// adir: is a directory", and a named pipe blocked the command).
func TestInputsThatAreNoFiles(t *testing.T) {
	dir := t.TempDir()
	adir := filepath.Join(dir, "adir")
	fifo := filepath.Join(dir, "fifo")
	empty := filepath.Join(dir, "empty.json")
	if err := os.Mkdir(adir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	chain := writeChain(t)
	db := filepath.Join(dir, "db", "chainplan.db")
	commands := []struct {
		args func(path string) []string
		want string
	}{
		{func(p string) []string { return []string{"solve", "--chain", p, "--budget", "40"} }, "want a chain file (chainplan.chain/v1 JSON)"},
		{func(p string) []string { return []string{"frontier", "--chain", p} }, "want a chain file"},
		{func(p string) []string {
			return []string{"pipeline", "--chain", p, "--gpus", "2", "--memory", "1GiB", "--bandwidth", "1GB/s"}
		}, "want a chain file"},
		{func(p string) []string { return []string{"simulate", "--chain", chain, "--plan", p} }, "want a plan file (JSON)"},
		{func(p string) []string {
			return []string{"plot", "pipeline", "--plan", p, "-o", filepath.Join(dir, "p.svg")}
		}, "want a pipeline plan"},
		{func(p string) []string { return []string{"--db", db, "ingest", p} }, "want a profile file (chainplan.profile/v1 Arrow)"},
		{func(p string) []string { return []string{"import", "pipedream", p} }, "want a PipeDream profile"},
		{func(p string) []string { return []string{"cluster", "check", p} }, "want a cluster file (YAML or JSON)"},
	}
	for _, path := range []struct{ path, is string }{
		{adir, "is a directory"},
		{fifo, "is a named pipe (FIFO), not a regular file"},
		{empty, "is empty"},
	} {
		for _, c := range commands {
			args := c.args(path.path)
			code, _, errs := runBounded(t, args...)
			if code != exitBadInput || !strings.Contains(errs, path.path+": "+path.is+"; "+c.want) {
				t.Errorf("chainplan %s: exit %d, stderr %q; want exit 2 saying %q",
					strings.Join(args, " "), code, errs, path.path+": "+path.is+"; "+c.want)
			}
		}
	}
}

// TestUnknownVersionsRefused: a document of a format version this chainplan does not read
// exits 2 naming the version and the one it reads (issue 33: simulate --plan accepted a
// chainplan.schedule/v7 plan), and a file of another kind says what it is.
func TestUnknownVersionsRefused(t *testing.T) {
	chain := writeChain(t)
	dir := t.TempDir()
	write := func(name, doc string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	code, plan, errs := run(t, "solve", "--chain", chain, "--budget", "24", "--slots", "24")
	if code != 0 {
		t.Fatalf("solve: exit %d: %s", code, errs)
	}
	v7 := write("plan7.json", strings.Replace(plan, "{", `{"format": "chainplan.schedule/v7",`, 1))
	pipe2 := write("pipe2.json", `{"format": "chainplan.pipeline/v2", "algo": "madpipe", "cuts": [3]}`)
	chain3 := write("chain3.json", strings.Replace(exampleA, "chainplan.chain/v1", "chainplan.chain/v3", 1))
	cluster9 := write("cluster.yaml", "format: chainplan.cluster/v9\nname: x\nnodes: [{gpu: V, gpus: 1, gpu_mem: 1GB}]\n")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"simulate", "--chain", chain, "--plan", v7},
			"read plan " + v7 + ": format chainplan.schedule/v7 is not supported (this chainplan reads chainplan.schedule/v1"},
		{[]string{"plot", "timeline", "--chain", chain, "--plan", v7, "-o", filepath.Join(dir, "t.svg")},
			"format chainplan.schedule/v7 is not supported"},
		{[]string{"simulate", "--chain", chain, "--plan", pipe2},
			"format chainplan.pipeline/v2 is not supported (this chainplan reads chainplan.pipeline/v1)"},
		{[]string{"solve", "--chain", chain3, "--budget", "40"},
			"read chain " + chain3 + ": format chainplan.chain/v3 is not supported (this chainplan reads chainplan.chain/v1 or chainplan.chain/v2)"},
		{[]string{"solve", "--chain", testdataFile("resnet_file.arrow"), "--budget", "40"},
			"resnet_file.arrow: chainplan: invalid chain: the file is an Arrow file (a profile?), not JSON"},
		{[]string{"cluster", "check", cluster9},
			cluster9 + ": format chainplan.cluster/v9 is not supported (this chainplan reads chainplan.cluster/v1)"},
	} {
		code, _, errs := run(t, tt.args...)
		if code != exitBadInput || !strings.Contains(errs, tt.want) {
			t.Errorf("chainplan %s: exit %d, stderr %q; want exit 2 saying %q", strings.Join(tt.args, " "), code, errs, tt.want)
		}
	}
}
