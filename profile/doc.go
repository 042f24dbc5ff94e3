// Package profile is chainplan's profile model: the one definition of what a profile
// measured and where it was taken, shared by every layer that handles profiles. The
// Arrow codec (package profilearrow) reads and writes it, the store (package store) keeps it
// in SQLite, and the planners get the chain that ChainOf builds from it.
//
// A profile is a list of Rows, one per stage and measurement repetition, and its
// provenance, a Metadata. Summarize aggregates the rows into one StageSummary per stage
// (the medians over the repetitions) and ChainOf turns the summaries into a
// chainplan.chain/v1 chain.
// Times are float64 seconds and sizes int64 bytes, the unit in every field's name, as in
// profile files, chain files and the store's columns, so that no layer converts a unit.
//
// The package imports the standard library and the root chainplan package only: using
// the model never pulls in Arrow or SQLite.
package profile
