//go:build !race

package pofo

const raceEnabled = false
