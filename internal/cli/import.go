package cli

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/profile/pipedream"
)

func newImportCmd(e *env) *cobra.Command {
	return groupCmd("import", "Turn another tool's profile into a chain file",
		`Turn a profile written by another tool into a chainplan.chain/v1 chain file, which
chainplan solve and chainplan pipeline read.`, newImportPipeDreamCmd(e))
}

func newImportPipeDreamCmd(e *env) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "pipedream GRAPH_TXT",
		Short: "Linearize a PipeDream profile (graph.txt) into a chain",
		Long: `Read a per-layer profile written by PipeDream's profiler (graph.txt: one line per
node with forward_compute_time and backward_compute_time in milliseconds, activation_size
and parameter_size in bytes, one line per edge) and write it as a chainplan.chain/v1 chain.

Branching regions collapse into virtual layers: the nodes that every input-to-output path
crosses end one layer each, and the nodes between two of them join the second. Times become
seconds; a layer's saved_bytes is the sum of its nodes' activation sizes. Input nodes make
input_bytes; nodes that depend on no input and cost nothing are dropped; nodes that lead to
no output (unused tuple elements, auxiliary heads) join the layer they read from.
docs/formats.md ("Importing PipeDream profiles") has the whole rule and the layer counts of the shared profiles.

A summary (nodes, layers, what was dropped) goes to standard error. A malformed file is
refused with exit status 2 and the line; so is a graph that cannot be linearized.`,
		Example: `  chainplan import pipedream testdata/pipedream/resnet50.graph.txt -o resnet50.json
  chainplan pipeline --chain resnet50.json --gpus 4 --memory 8GB --bandwidth 12GB/s`,
		Args: exactlyOneArg("import pipedream", "graph.txt"),
		RunE: func(_ *cobra.Command, args []string) error {
			return runImportPipeDream(e, args[0], output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "write the chain to this file instead of standard output")
	return cmd
}

func runImportPipeDream(e *env, path, output string) error {
	data, err := chainplan.ReadInput(path, "a PipeDream profile (graph.txt)")
	if err != nil {
		return err
	}
	g, err := pipedream.Parse(bytes.NewReader(data))
	if err != nil {
		return importError(path, err)
	}
	imp, err := pipedream.Linearize(g)
	if err != nil {
		return importError(path, err)
	}
	b, err := imp.Chain.MarshalIndent()
	if err != nil {
		return err
	}
	largest := 0
	for _, l := range imp.Layers {
		largest = max(largest, len(l.Nodes))
	}
	fmt.Fprintf(e.stderr, "%s: %d nodes, %d edges -> %d layers (largest %d nodes); input %d bytes from %d input node(s), %d constant(s) dropped, %d side node(s) folded in\n",
		filepath.Base(path), len(g.Nodes), len(g.Edges), len(imp.Layers), largest, imp.Chain.InputBytes,
		len(imp.Inputs), len(imp.Constants), len(imp.Side))
	return writeOutput(e, output, b)
}

// importError makes a profile that cannot be read or linearized a usage error (exit 2)
// that names the file.
func importError(path string, err error) error {
	if errors.Is(err, pipedream.ErrInvalidProfile) || errors.Is(err, pipedream.ErrNotLinear) {
		return &usageError{fmt.Errorf("%s: %w", path, err)}
	}
	return err
}
