//go:build !race

package planner_test

const raceEnabled = false
