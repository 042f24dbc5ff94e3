package pybind

import (
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/milp"
)

// captureStdout runs fn with the process's standard output redirected, as RunCLI writes
// there, and returns what it wrote.
func captureStdout(t *testing.T, fn func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stdout
	os.Stdout = w
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	defer func() { os.Stdout = saved }()
	fn()
	w.Close()
	return <-done
}

// TestRunCLI: the console script's entry point runs the CLI with its exit statuses, and
// refuses arguments that are not a JSON array of strings.
func TestRunCLI(t *testing.T) {
	var code int
	out := captureStdout(t, func() {
		var err error
		if code, err = RunCLI(`["--version"]`); err != nil {
			t.Error(err)
		}
	})
	if code != 0 || !strings.Contains(out, "chainplan version "+chainplan.Version) {
		t.Fatalf("--version: exit %d, %q", code, out)
	}
	if code, err := RunCLI(`["solve", "--no-such-flag"]`); err != nil || code != 2 {
		t.Fatalf("a bad flag: exit %d, %v; want 2", code, err)
	}
	if _, err := RunCLI(`{"args": 1}`); err == nil || !strings.HasPrefix(err.Error(), "chainplan[bad-request]") {
		t.Fatalf("bad arguments: %v, want a bad-request error", err)
	}
}

// TestUseHighs: the program Python passes is the one madpipe runs; a path that is no
// program gives the contiguous fallback, marked in the plan, or with require_solver the
// no-solver error code (Python's MissingSolverError).
func TestUseHighs(t *testing.T) {
	found, err := milp.FindHighs()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = UseHighs("", "") })
	chain, err := os.ReadFile("../examples/vgg16.json")
	if err != nil {
		t.Fatal(err)
	}
	req := `{"algo": "madpipe", "gpus": 2, "memory_bytes": 28000000000, "bandwidth": 12e9`
	plan := func(extra string) (*pipeplan.Plan, []string, error) {
		out, err := Pipeline(callOf(chainSource(string(chain)), req+extra+"}"))
		if err != nil {
			return nil, nil, err
		}
		var got struct {
			Plan  json.RawMessage `json:"plan"`
			Notes []string        `json:"notes"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatal(err)
		}
		p, err := pipeplan.Parse(got.Plan)
		return p, got.Notes, err
	}
	t.Setenv(milp.EnvHighs, "/nonexistent/highs") // UseHighs answers before the variable
	if err := UseHighs(found.Path, "highsbox"); err != nil {
		t.Fatal(err)
	}
	p, _, err := plan("")
	if err != nil || p.Chosen != "madpipe" || p.Fallback != "" {
		t.Fatalf("with the program passed: %+v, %v; want MadPipe's own plan", p, err)
	}
	if err := UseHighs(t.TempDir(), "highsbox"); err != nil {
		t.Fatal(err)
	}
	p, notes, err := plan("")
	if err != nil || p.Fallback != pipeplan.FallbackNoSolver || len(notes) == 0 {
		t.Fatalf("with no program: %+v, %q, %v; want the marked fallback and a note", p, notes, err)
	}
	if _, _, err := plan(`, "require_solver": true`); err == nil || !strings.HasPrefix(err.Error(), "chainplan[no-solver]: ") {
		t.Fatalf("require_solver without a program: %v, want the no-solver code", err)
	}
}
