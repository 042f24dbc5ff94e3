//go:build race

package offload

// raceEnabled says the race detector is on: it slows the DP about tenfold, so the widest
// randomized tests run fewer cases under it (make test runs -race -short; the parallel
// table fill is still raced on every case TestFillMatchesRecursion builds).
const raceEnabled = true
