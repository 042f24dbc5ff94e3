// Package dpcount counts the dynamic programs the rotor planners run, so that tests can
// hold the planner façade to one search per call: finding the smallest budget through an
// infeasibility error once entered the rotor DP seven times for one plan (issue 10).
//
// The counters are process-wide and only ever increase; a test reads them before and
// after a call and must not run in parallel with other planner calls. One atomic add per
// dynamic program costs nothing next to the program itself.
package dpcount

import "sync/atomic"

var (
	// Need counts the feasibility DPs, one per discretization probed: the persistent
	// algorithm's (minMemory, O(N³)) and the floating one's (floatingNeed, O(N⁶)).
	Need atomic.Int64
	// Table counts the persistent cost tables built (rotor's buildTable, O(S·N³)).
	Table atomic.Int64
	// Floating counts the floating cost tables built (O(S·N⁶)).
	Floating atomic.Int64
)

// Counts is a snapshot of the three counters.
type Counts struct{ Need, Table, Floating int64 }

// Now returns the counters' current values.
func Now() Counts {
	return Counts{Need: Need.Load(), Table: Table.Load(), Floating: Floating.Load()}
}

// Since returns how many of each program ran since the snapshot c.
func (c Counts) Since() Counts {
	n := Now()
	return Counts{Need: n.Need - c.Need, Table: n.Table - c.Table, Floating: n.Floating - c.Floating}
}
