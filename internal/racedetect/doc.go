// Package racedetect says whether the binary was built with the race detector (go test
// -race). The property and oracle tests run thousands of random cases; under the race
// detector, which slows every instruction several times over and finds a data race in the
// first cases as well as in the thousandth, they run a tenth of them (make test runs -race;
// the counts without it are unchanged).
package racedetect

// Scale returns n, or a tenth of it (at least 1) under the race detector.
func Scale(n int) int {
	if Enabled && n > 10 {
		return n / 10
	}
	return n
}
