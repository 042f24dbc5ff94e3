// Package pybind is the only package gopy binds into the Python module chainplan._gocore.
//
// Its API is deliberately small and flat: functions of strings and integers returning one
// string (JSON) and an error, so that nothing crosses cgo element by element and gopy's
// restrictions (one result plus error, no channels, one Go runtime per process) never bite.
// Every entry point recovers from panics, because a Go panic would end the Python process.
//
// Errors lose their Go identity when they cross into Python (gopy turns them into
// RuntimeError), so each message starts with a stable code that chainplan/_bind.py maps
// back to an exception class:
//
//	chainplan[infeasible;min_budget_bytes=N]: …   the budget is too small (N: the smallest)
//	chainplan[invalid-chain]: …                   the chain breaks the chain contract
//	chainplan[invalid-profile]: …                 a profile file is not a valid version-1 profile
//	chainplan[invalid-plan]: …                    a plan or sequence cannot be read
//	chainplan[bad-request]: …                     unknown algorithm, bad option
//	chainplan[bad-query]: …                       SQL the database rejects, or a statement that would write
//	chainplan[not-found]: …                       a stored run or plan, or the database, does not exist
//	chainplan[no-solver]: …                       no MILP solver, and the request refuses to fall back
//	chainplan[internal]: …                        anything else, a bug
package pybind
