package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/chainplan/chainplan"
)

// writeJSON writes v as indented JSON followed by a newline.
func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// checkFormat rejects an output format outside allowed.
func checkFormat(format string, allowed ...string) error {
	for _, a := range allowed {
		if format == a {
			return nil
		}
	}
	return usagef("unknown --format %q (want %s)", format, strings.Join(allowed, " or "))
}

// writeSequence prints a sequence a few operations per line, each line prefixed with the
// position of its first operation.
func writeSequence(w io.Writer, seq []chainplan.Op) {
	const perLine = 8
	for i := 0; i < len(seq); i += perLine {
		end := min(i+perLine, len(seq))
		fmt.Fprintf(w, "  %4d  %s\n", i, chainplan.FormatSequence(seq[i:end]))
	}
}

// bytesLabel writes a byte count with its binary-unit rendering.
func bytesLabel(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%d B (%s)", n, chainplan.FormatBytes(n))
}

// parseBudget reads a --budget value.
func parseBudget(s string) (int64, error) {
	if s == "" {
		return 0, usagef("--budget is required (bytes, or with a unit such as 512MiB or 2GB)")
	}
	b, err := chainplan.ParseBytes(s)
	if err != nil {
		return 0, &usageError{fmt.Errorf("--budget: %w", err)}
	}
	if b <= 0 {
		return 0, usagef("--budget must be positive (got %q)", s)
	}
	return b, nil
}
