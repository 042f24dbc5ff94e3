package cli

import (
	"fmt"
	"strings"

	"github.com/chainplan/chainplan/planner"
)

// This file turns the planner registry into the CLI's help texts: no command keeps its
// own list of algorithm names.

// algoNames returns the names of the registry's entries for which keep holds, in table
// order.
func algoNames(keep func(planner.Entry) bool) []string {
	var out []string
	for _, e := range planner.Entries() {
		if keep(e) {
			out = append(out, e.Name)
		}
	}
	return out
}

// solvable reports whether solve runs the algorithm: its plans are a sequence, of one
// chain or of towers joined at the loss.
func solvable(e planner.Entry) bool { return e.Schedule != nil || e.Multichain != nil }

// orList joins names as "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// algoHelp lists the algorithms of solve by family, one line each, for its long help.
func algoHelp() string {
	var b strings.Builder
	width := 12
	for _, e := range planner.Entries() {
		if solvable(e) {
			width = max(width, len(e.Name)+1)
		}
	}
	for _, fam := range []planner.Family{planner.Checkpointing, planner.Offloading, planner.Multichain} {
		var lines []string
		needs := true
		for _, e := range planner.Entries() {
			if e.Family != fam || !solvable(e) {
				continue
			}
			lines = append(lines, fmt.Sprintf("  %-*s %s\n", width, e.Name, e.Summary))
			needs = needs && e.Reads(planner.FieldBandwidth)
		}
		if len(lines) == 0 {
			continue
		}
		head := strings.ToUpper(string(fam[:1])) + string(fam[1:]) + " algorithms"
		if fam == planner.Multichain {
			head += " (towers joined at the loss)"
		}
		if needs {
			head += " (need --bandwidth)"
		}
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString(head + ":\n" + strings.Join(lines, ""))
	}
	return b.String()
}
