package chainplan_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
)

// TestTableLimit: the limit of the planners' tables is 2 GiB unless $CHAINPLAN_TABLE_LIMIT,
// a size as the CLI reads budgets, says otherwise; a value that is not a positive size is
// an OptionError naming the variable (exit status 2).
func TestTableLimit(t *testing.T) {
	tests := []struct {
		env, set bool
		value    string
		want     int64
		wantErr  string
	}{
		{env: false, want: 2 << 30},
		{env: true, value: "", want: 2 << 30},
		{env: true, value: "8GiB", want: 8 << 30},
		{env: true, value: "500MB", want: 500_000_000},
		{env: true, value: "lots", wantErr: `CHAINPLAN_TABLE_LIMIT: byte size "lots"`},
		{env: true, value: "0", wantErr: "CHAINPLAN_TABLE_LIMIT: \"0\": the limit must be positive"},
		{env: true, value: "-1GiB", wantErr: "CHAINPLAN_TABLE_LIMIT"},
	}
	for _, tt := range tests {
		if tt.env {
			t.Setenv(chainplan.TableLimitEnv, tt.value)
		} else {
			t.Setenv(chainplan.TableLimitEnv, "") // restored after the test
		}
		got, err := chainplan.TableLimit()
		if tt.wantErr != "" {
			var oe *chainplan.OptionError
			if !errors.As(err, &oe) || !errors.Is(err, chainplan.ErrUnsupported) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%q: TableLimit() = %d, %v; want an OptionError containing %q", tt.value, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%q: TableLimit() = %d, %v; want %d", tt.value, got, err, tt.want)
		}
	}
}

// TestCheckTables: tables within the limit pass; over it, a *SizeError names the planner,
// the chain's length, the size and the limit, and says what to do, and errors.Is
// ErrUnsupported holds so that the CLI exits with status 2.
func TestCheckTables(t *testing.T) {
	t.Setenv(chainplan.TableLimitEnv, "1MiB")
	if err := chainplan.CheckTables("rotor", 10, "its tables", 1<<20, nil); err != nil {
		t.Fatalf("at the limit: %v", err)
	}
	var gotLimit int64
	err := chainplan.CheckTables("rotor", 40000, "its tables", math.Inf(1), func(limit int64) string {
		gotLimit = limit
		return "use --slots 12"
	})
	var se *chainplan.SizeError
	if !errors.As(err, &se) || !errors.Is(err, chainplan.ErrUnsupported) {
		t.Fatalf("over the limit: %v, want a *SizeError wrapping ErrUnsupported", err)
	}
	if gotLimit != 1<<20 || se.NeedBytes != math.MaxInt64 || se.LimitBytes != 1<<20 {
		t.Fatalf("fix called with %d, error %+v", gotLimit, se)
	}
	for _, want := range []string{"rotor: a chain of 40000 stages is too large", "its tables would take",
		"over the limit of 1.00 MiB (CHAINPLAN_TABLE_LIMIT)", "; use --slots 12"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	t.Setenv(chainplan.TableLimitEnv, "nonsense")
	if err := chainplan.CheckTables("rotor", 1, "x", 1, nil); !strings.Contains(err.Error(), chainplan.TableLimitEnv) {
		t.Fatalf("a bad limit: %v", err)
	}
}

// TestSizeErrorSteps: a limit on the work of a DP reads in its unit, "more than" when the
// planner stopped on the way.
func TestSizeErrorSteps(t *testing.T) {
	tests := []struct {
		err  *chainplan.SizeError
		want string
	}{
		{&chainplan.SizeError{Algo: "optimal", Stages: 60, What: "the floating DP", NeedSteps: 5.57e27, LimitSteps: 1.2e10,
			Fix: "use --algo rotor"},
			"optimal: a chain of 60 stages is too large: the floating DP would take about 5.57e+27 steps, over optimal's limit of 1.2e+10; use --algo rotor"},
		{&chainplan.SizeError{Algo: "madpipe", Stages: 1500, What: "phase 1's DP", NeedSteps: 1500, LimitSteps: 1023, Unit: "layers"},
			"madpipe: a chain of 1500 stages is too large: phase 1's DP would take 1500 layers, over madpipe's limit of 1023"},
		{&chainplan.SizeError{Algo: "madpipe", Stages: 900, What: "phase 1's DP", NeedSteps: 1e8 + 1, AtLeast: true, LimitSteps: 1e8},
			"phase 1's DP would take more than 1e+08 steps, over madpipe's limit of 1e+08"},
		{&chainplan.SizeError{Algo: "opportunist", Stages: 300, What: "its table", NeedBytes: 3 << 30, AtLeast: true, LimitBytes: 2 << 30},
			"its table would take more than 3221225472 B (3.00 GiB), over the limit of 2.00 GiB (CHAINPLAN_TABLE_LIMIT)"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); !strings.Contains(got, tt.want) {
			t.Errorf("Error() = %q, want it to contain %q", got, tt.want)
		}
	}
}
