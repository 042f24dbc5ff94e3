package pybind

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/chainplan/chainplan/internal/cli"
	"github.com/chainplan/chainplan/planner/milp"
)

// RunCLI runs the chainplan command line with the arguments argsJSON lists (a JSON array
// of strings, the program name left out), writing to the process's standard output and
// error, and returns its exit status (docs/CLI.md). The Python package's `chainplan`
// console script calls it, so that the CLI and the library share this extension's Go
// runtime instead of the wheel shipping a second program of the same size. The error is
// for arguments that are not a JSON array of strings; everything the CLI reports goes to
// standard error with its exit status.
func RunCLI(argsJSON string) (status int, err error) {
	defer recoverError(&err)
	var args []string
	if err := json.Unmarshal([]byte(argsJSON), &args); err != nil {
		return 0, codedError(badRequest(fmt.Errorf("the arguments must be a JSON array of strings: %w", err)))
	}
	return cli.Run(context.Background(), args, os.Stdout, os.Stderr), nil
}

// UseHighs makes the planners of this process run the HiGHS program at path, found by
// the Python side (origin says how: "CHAINPLAN_HIGHS", "highsbox"); "" returns to
// milp.FindHighs's own search. Python resolves it from the environment and the packages
// it imports at each planning call: this Go runtime cannot tell which Python environment
// loaded it, and sees the process environment as it was when it was loaded.
func UseHighs(path, origin string) (err error) {
	defer recoverError(&err)
	milp.SetHighs(path, origin)
	return nil
}
