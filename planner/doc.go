// Package planner is the single entry point the CLI and the Python bindings use to plan a
// chain: it names the algorithms and dispatches a Request to the package implementing it
// (planner/rotor for rotor, optimal and revolve; planner/baseline for sequential and
// store-all).
package planner
