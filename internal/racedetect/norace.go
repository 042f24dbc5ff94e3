//go:build !race

package racedetect

// Enabled is false: the race detector is off.
const Enabled = false
