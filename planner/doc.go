// Package planner is the single entry point the CLI and the Python bindings use to plan a
// chain. Its registry (Entries) is the one table of the algorithms: each Entry names an
// algorithm, its family, its plan format, the request fields it reads, and the functions
// of the package implementing it (planner/rotor for rotor, optimal and revolve;
// planner/baseline for sequential and store-all; planner/offload for the offloading
// algorithms). Solve, MinBudget and SolveMin check a Request against the table and call
// the entry's functions; the CLI's help and Python's validation read the same table.
package planner
