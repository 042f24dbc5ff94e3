package milp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// DefaultTimeLimit is the time limit of a solve when Options.TimeLimit is zero.
const DefaultTimeLimit = 10 * time.Second

// EnvHighs names the environment variable that points to the highs program.
const EnvHighs = "CHAINPLAN_HIGHS"

// ErrNoSolver reports that no MILP solver program was found.
var ErrNoSolver = errors.New("milp: no MILP solver found")

// InstallHint says how to get the solver; error messages and the planners' notes quote it.
const InstallHint = "install the highsbox package, which ships the HiGHS program, into the Python " +
	"environment chainplan runs in (`python -m pip install highsbox`; `pip install chainplan` " +
	"brings it), or put the `highs` program on PATH, or set " + EnvHighs + " to its path"

// Options tunes a solve. The zero value means the defaults.
type Options struct {
	// TimeLimit bounds the solver's search (default DefaultTimeLimit). At the limit the
	// best solution found is returned with status Feasible.
	TimeLimit time.Duration
	// Threads is the number of solver threads (default 1: the planners run beside other
	// work, and one thread keeps runs reproducible).
	Threads int
	// RelGap is the relative optimality gap at which the search stops (default 1e-6).
	RelGap float64
}

// Solver solves a Model. Implementations must be safe for concurrent use.
type Solver interface {
	// Solve returns the solution, or an error when the solver could not be run or its
	// answer not read; an infeasible model is a Solution with status Infeasible, not an
	// error.
	Solve(ctx context.Context, m *Model, opts Options) (*Solution, error)
}

// Highs runs the HiGHS command-line program.
type Highs struct {
	// Path is the program.
	Path string
	// LibDir, when set, is put first on LD_LIBRARY_PATH for the program.
	LibDir string
	// Origin says where FindHighs found it (OriginSet, OriginEnv, ...); empty for a Highs
	// built by hand.
	Origin string
}

// The places FindHighs looks, in order; Highs.Origin holds the one that answered.
const (
	OriginSet        = "set by the caller"                   // SetHighs: the Python package's highsbox
	OriginEnv        = EnvHighs                              // the environment variable
	OriginInstall    = "installation"                        // highsbox beside the running program
	OriginPath       = "PATH"                                // a `highs` program on PATH
	OriginWorkingDir = "a .venv above the working directory" // development checkouts
	OriginSite       = "a Python site folder"                // $VIRTUAL_ENV, the user's, the system's
)

// preferred is the program SetHighs chose, searched before anything else.
var preferred struct {
	sync.Mutex
	path, origin string
}

// SetHighs makes FindHighs answer with the program at path before any other search, origin
// saying where the caller found it (for messages). The Python bindings call it with the
// program of the highsbox package that the interpreter imports (or with $CHAINPLAN_HIGHS as
// Python sees it): a Go runtime loaded into Python cannot tell which environment it was
// installed in (its executable is the interpreter, symlinks resolved), and searching from
// the working directory made MadPipe's plan depend on it. An empty path restores the
// search. Safe for concurrent use.
func SetHighs(path, origin string) {
	preferred.Lock()
	defer preferred.Unlock()
	preferred.path, preferred.origin = path, origin
}

var _ Solver = (*Highs)(nil)

// FindHighs looks for the highs program, in order: the one SetHighs chose; $CHAINPLAN_HIGHS;
// the highsbox package of the Python environment the running program is installed in
// (prefix/bin/chainplan → prefix/lib/python3*/site-packages/highsbox); `highs` on PATH;
// then, for development checkouts and hand installs, highsbox under $VIRTUAL_ENV, in a
// .venv of the working directory or one above it, in the user's and the system's site
// folders. A program named by SetHighs or $CHAINPLAN_HIGHS must be there: if it is not an
// executable file the search stops with an error, rather than quietly taking another
// program. Errors wrap ErrNoSolver and say how to install the solver.
func FindHighs() (*Highs, error) {
	preferred.Lock()
	path, origin := preferred.path, preferred.origin
	preferred.Unlock()
	if path != "" {
		if !isExecutable(path) {
			return nil, fmt.Errorf("%w: %q (%s) is not an executable file; %s", ErrNoSolver, path, origin, InstallHint)
		}
		return newHighs(path, OriginSet+": "+origin), nil
	}
	if p := os.Getenv(EnvHighs); p != "" {
		if !isExecutable(p) {
			return nil, fmt.Errorf("%w: %s=%q is not an executable file; %s", ErrNoSolver, EnvHighs, p, InstallHint)
		}
		return newHighs(p, OriginEnv), nil
	}
	if exe, err := os.Executable(); err == nil {
		if p := highsboxIn(filepath.Dir(filepath.Dir(exe))); p != "" {
			return newHighs(p, OriginInstall), nil
		}
	}
	if p, err := exec.LookPath("highs"); err == nil {
		return newHighs(p, OriginPath), nil
	}
	for _, pf := range fallbackPrefixes() {
		if p := highsboxIn(pf.dir); p != "" {
			return newHighs(p, pf.origin), nil
		}
	}
	return nil, fmt.Errorf("%w: %s", ErrNoSolver, InstallHint)
}

// highsboxIn returns the program of the highsbox package installed under the Python prefix
// dir, or "".
func highsboxIn(dir string) string {
	for _, site := range []string{"site-packages", "dist-packages"} {
		matches, _ := filepath.Glob(filepath.Join(dir, "lib", "python3*", site, "highsbox", "highs_dist", "bin", "highs"))
		for _, p := range matches {
			if isExecutable(p) {
				return p
			}
		}
	}
	return ""
}

// newHighs sets LibDir when the program sits in a bin/ folder beside a lib/ folder holding
// libhighs: highsbox's program needs it, and it does no harm to an installed one.
func newHighs(path, origin string) *Highs {
	h := &Highs{Path: path, Origin: origin}
	lib := filepath.Join(filepath.Dir(filepath.Dir(path)), "lib")
	if m, _ := filepath.Glob(filepath.Join(lib, "libhighs*")); len(m) > 0 {
		h.LibDir = lib
	}
	return h
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

type prefix struct{ dir, origin string }

// fallbackPrefixes lists the Python prefixes searched after PATH: $VIRTUAL_ENV, every
// .venv from the working directory up to the root (a checkout's, which `go test` needs),
// then the user's and the system's site folders (pip install --user, Debian's /usr/local).
func fallbackPrefixes() []prefix {
	var out []prefix
	if v := os.Getenv("VIRTUAL_ENV"); v != "" {
		out = append(out, prefix{v, OriginSite})
	}
	if dir, err := os.Getwd(); err == nil {
		for {
			out = append(out, prefix{filepath.Join(dir, ".venv"), OriginWorkingDir})
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		out = append(out, prefix{filepath.Join(home, ".local"), OriginSite})
	}
	return append(out, prefix{"/usr/local", OriginSite}, prefix{"/usr", OriginSite})
}

// Solve writes the model to a temporary LP file, runs highs on it and reads the solution
// file. The program is killed if it overruns the time limit by far (twice the limit plus
// 10 s) or when ctx ends.
func (h *Highs) Solve(ctx context.Context, m *Model, opts Options) (*Solution, error) {
	if opts.TimeLimit <= 0 {
		opts.TimeLimit = DefaultTimeLimit
	}
	if opts.Threads <= 0 {
		opts.Threads = 1
	}
	if opts.RelGap <= 0 {
		opts.RelGap = 1e-6
	}
	dir, err := os.MkdirTemp("", "chainplan-milp-")
	if err != nil {
		return nil, fmt.Errorf("milp: %w", err)
	}
	defer os.RemoveAll(dir)
	model, sol, optFile := filepath.Join(dir, "model.lp"), filepath.Join(dir, "model.sol"), filepath.Join(dir, "options.txt")
	if err := writeFile(model, m.WriteLP); err != nil {
		return nil, fmt.Errorf("milp: write the model: %w", err)
	}
	options := fmt.Sprintf("time_limit = %g\nthreads = %d\nmip_rel_gap = %g\nrandom_seed = 0\n",
		opts.TimeLimit.Seconds(), opts.Threads, opts.RelGap)
	if err := os.WriteFile(optFile, []byte(options), 0o600); err != nil {
		return nil, fmt.Errorf("milp: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*opts.TimeLimit+10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.Path, "--model_file", model, "--solution_file", sol, "--options_file", optFile)
	cmd.Dir = dir
	if h.LibDir != "" {
		ld := h.LibDir
		if old := os.Getenv("LD_LIBRARY_PATH"); old != "" {
			ld += string(os.PathListSeparator) + old
		}
		cmd.Env = append(os.Environ(), "LD_LIBRARY_PATH="+ld)
	}
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("milp: %s: %w\n%s", h.Path, err, tail(log.String()))
	}
	f, err := os.Open(sol)
	if err != nil {
		return nil, fmt.Errorf("milp: %s wrote no solution file: %w\n%s", h.Path, err, tail(log.String()))
	}
	defer f.Close()
	s, err := readHighsSolution(m, f)
	if err != nil {
		return nil, fmt.Errorf("milp: %w", err)
	}
	return s, nil
}

func writeFile(path string, write func(w io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// tail keeps the end of the solver's log for an error message.
func tail(s string) string {
	const n = 1500
	s = strings.TrimSpace(s)
	if len(s) > n {
		s = "..." + s[len(s)-n:]
	}
	return s
}
