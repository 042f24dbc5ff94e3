package main

import (
	"fmt"
	"io"
	"strings"
)

// writeKillFigures writes the kills' table and the failures, if any.
func writeKillFigures(w io.Writer, figs []killFigures) {
	fmt.Fprintln(w, "| command | backend | runs | kills | exited first | aimed before / in / after the write window | in a write transaction (probe) | store kept nothing / part / all | re-runs converged | duration (ms) | write window (ms) | failures | time |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	total := 0
	for _, f := range figs {
		total += f.kills
		fmt.Fprintf(w, "| %s | %s | %d | %d | %d | %d / %d / %d | %d | %d / %d / %d | %d | %.0f | %.0f-%.0f | %d | %.0f s |\n",
			f.command, f.backend, f.trials, f.kills, f.exitedFirst, f.aimed[0], f.aimed[1], f.aimed[2], f.inWrite,
			f.landed[0], f.landed[1], f.landed[2], f.converged, f.durationMS, f.windowMS[0], f.windowMS[1],
			len(f.failures), f.elapsed.Seconds())
	}
	fmt.Fprintf(w, "\n%d kills in all.\n", total)
	for _, f := range figs {
		for _, msg := range f.failures {
			fmt.Fprintf(w, "\n- FAILED: %s on %s: %s", f.command, f.backend, msg)
		}
	}
	fmt.Fprintln(w)
}

// writeOutcomes writes the outcomes of the damaged or full stores.
func writeOutcomes(w io.Writer, title string, outs []outcome) int {
	failed := 0
	fmt.Fprintf(w, "\n%s\n\n| store | command | exit | message (first line; DB is the database) | names it | file unchanged | as required |\n|---|---|---|---|---|---|---|\n", title)
	for _, o := range outs {
		verdict := "yes"
		if !o.ok {
			verdict = "**no**"
			failed++
		}
		if o.panicked {
			verdict += " (Go panic)"
		}
		// Whether a message names the file, and whether the file changed, matter for
		// commands that failed.
		msg, names, unchanged := o.message, yesNo(o.namesFile), o.unchanged
		if o.exit == 0 {
			names, unchanged = "", ""
			if !strings.HasPrefix(o.command, "(check)") {
				msg = "(succeeded)"
			}
		}
		fmt.Fprintf(w, "| %s | `%s` | %d | %s | %s | %s | %s |\n", o.store, o.command, o.exit,
			strings.ReplaceAll(msg, "|", `\|`), names, unchanged, verdict)
	}
	return failed
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
