// Package milp builds mixed-integer linear programs and solves them with an external
// solver program, so that the planners stay free of cgo.
//
// A Model holds variables (continuous, integer or binary, with bounds), linear constraints
// and a linear objective. WriteLP writes it in the CPLEX LP format as HiGHS reads it, and
// Highs runs the `highs` program (HiGHS, https://highs.dev, MIT licence) on that file
// with a time limit and reads its solution file back.
//
// Finding the program (FindHighs), first answer wins: the program the caller chose with
// SetHighs (the Python bindings pass the highsbox package the interpreter imports, so the
// CLI and Python plan with the solver that came with the installed package, whatever the
// working directory); the environment variable CHAINPLAN_HIGHS; the highsbox package of the
// Python environment the running program is installed in; `highs` on PATH; then, for
// checkouts and hand installs, highsbox under $VIRTUAL_ENV, in a .venv of the working
// directory or above it, in the user's or the system's site folders. highsbox's program
// does not find its own shared library, so the runner puts the library folder beside the
// program's bin/ on LD_LIBRARY_PATH. Without a solver, FindHighs returns an error wrapping
// ErrNoSolver whose text says how to install one.
//
// Statuses (Solution.Status): Optimal; Feasible (a limit, usually the time limit, stopped
// the search with a solution in hand); Infeasible (proved); NoSolution (a limit stopped
// the search before any solution was found, or the solver failed to decide).
package milp
