package cli

import (
	"fmt"
	"math"
)

// Times in the text outputs always carry their unit: chains and plans hold seconds (the
// profiler's unit), which a bare "0.0153671" does not say.

// timeUnit is a unit of time: its name and its length in seconds.
type timeUnit struct {
	name string
	s    float64
}

// timeUnitOf returns the unit that reads best for times around t seconds: h from two
// hours, s from one second, ms from a millisecond, else µs.
func timeUnitOf(t float64) timeUnit {
	t = math.Abs(t)
	switch {
	case t >= 7200:
		return timeUnit{"h", 3600}
	case t >= 1:
		return timeUnit{"s", 1}
	case t >= 1e-3:
		return timeUnit{"ms", 1e-3}
	case t == 0:
		return timeUnit{"s", 1}
	}
	return timeUnit{"µs", 1e-6}
}

// num writes t seconds as a number of u, four significant digits, without the unit.
func (u timeUnit) num(t float64) string { return fmt.Sprintf("%.4g", t/u.s) }

// secondsText writes a time with a unit that reads well: "3.2 ms", "4.71 s", "1.3 h".
// NaN, which the figures use for "not measured", reads "—".
func secondsText(s float64) string {
	if math.IsNaN(s) {
		return "—"
	}
	u := timeUnitOf(s)
	return u.num(s) + " " + u.name
}
