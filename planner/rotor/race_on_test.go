//go:build race

package rotor

// raceEnabled says the race detector is on: it slows the DP about tenfold, so the widest
// randomized tests run fewer cases under it (make test runs -race -short).
const raceEnabled = true
