// Package pipedream reads the per-layer profiles that PipeDream's profiler writes
// (graph.txt, github.com/msr-fiddle/pipedream) and turns them into chainplan chains.
//
// A profile is a DAG of PyTorch modules and functions, one line per node and one per
// edge (Parse). Pipeline planners need a chain, so Linearize collapses the DAG: the nodes
// that every input-to-output path crosses (the output's dominators, the "cut nodes") end
// one layer each, and each branching region between two cut nodes becomes one virtual
// layer that ends at the second. docs/formats.md ("Importing PipeDream profiles") states
// the rule, what is dropped, how PipeDream's fields map to a chain's, and the layer
// counts of the shared profiles.
//
// The package imports the standard library and the root chainplan package only.
package pipedream
