//go:build race

package racedetect

// Enabled is true: the race detector is on.
const Enabled = true
