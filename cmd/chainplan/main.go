// Command chainplan profiles, stores and plans memory-saving schedules for chain-shaped
// models. See `chainplan --help` and docs/CLI.md.
//
// The commands live in internal/cli, which the Python package's `chainplan` script runs
// through the bindings (pybind.RunCLI); this program is the same CLI without Python.
package main

import (
	"context"
	"os"

	"github.com/chainplan/chainplan/internal/cli"
)

func main() {
	os.Exit(cli.Run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}
