//go:build race

package planner_test

// raceEnabled says the race detector is on: it slows the planners about tenfold, so the
// randomized comparisons run fewer cases under it (make test runs -race -short).
const raceEnabled = true
