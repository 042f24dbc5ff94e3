package cli

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
)

// Any stored plan replays from the database, an offloading plan with its transfers.
func TestShowPlanAndSimulateStoredPlan(t *testing.T) {
	db := t.TempDir() + "/s.db"
	mustIngest(t, db, testdataFile("resnet_file.arrow"))
	code, rotor, errs := runDB(t, db, "solve", "--run", "1", "--budget", "min")
	if code != 0 {
		t.Fatalf("solve rotor: exit %d: %s", code, errs)
	}
	var smallest chainplan.Plan
	if err := json.Unmarshal([]byte(rotor), &smallest); err != nil {
		t.Fatal(err)
	}
	// pofo at rotor's smallest budget, where it offloads: one solve, where "min" searches
	// (most of this test's time under the race detector).
	code, printed, errs := runDB(t, db, "solve", "--run", "1", "--algo", "pofo", "--bandwidth", "12GB/s",
		"--budget", strconv.FormatInt(smallest.BudgetBytes, 10))
	if code != 0 {
		t.Fatalf("solve pofo: exit %d: %s", code, errs)
	}
	code, shown, errs := runDB(t, db, "show-plan", "2", "--format", "json")
	if code != 0 {
		t.Fatalf("show-plan: exit %d: %s", code, errs)
	}
	var a, b chainplan.Plan
	if err := json.Unmarshal([]byte(printed), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(shown), &b); err != nil {
		t.Fatal(err)
	}
	if a.Offload == nil || len(a.Offload.Transfers) == 0 {
		t.Fatalf("the pofo plan offloads nothing: %s", printed)
	}
	if b.Offload == nil || len(b.Offload.Transfers) != len(a.Offload.Transfers) || b.Makespan != a.Makespan {
		t.Fatalf("the stored pofo plan lost its offload section:\nprinted %s\nshown %s", printed, shown)
	}
	for _, id := range []string{"1", "2"} {
		code, out, errs := runDB(t, db, "simulate", "--plan-id", id)
		if code != 0 || !strings.Contains(out, "valid") {
			t.Errorf("simulate --plan-id %s: exit %d\n%s%s", id, code, out, errs)
		}
	}
	code, out, _ := runDB(t, db, "show-plan", "1")
	if code != 0 || !strings.Contains(out, "plan        1 of run 1") || !strings.Contains(out, "algorithm   rotor") ||
		!strings.Contains(out, "request     budget min, from cli\n") {
		t.Errorf("show-plan 1 text:\n%s", out)
	}
	if code, out, _ := runDB(t, db, "show-plan", "2"); code != 0 ||
		!strings.Contains(out, "bandwidth 1.2e+10 bytes/s, from cli\n") {
		t.Errorf("show-plan 2 text:\n%s", out)
	}
}

func TestStoredPlanErrors(t *testing.T) {
	db := t.TempDir() + "/s.db"
	mustIngest(t, db, testdataFile("resnet_file.arrow"))
	for _, tt := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"show-plan", "9"}, 2, "no plan 9"},
		{[]string{"show-plan", "x"}, 2, "PLAN must be a plan id"},
		{[]string{"show-plan"}, 2, "one PLAN argument"},
		{[]string{"simulate", "--plan-id", "9"}, 2, "no plan 9"},
		{[]string{"simulate", "--plan-id", "1", "--chain", "c.json"}, 2, "without --chain and --plan"},
	} {
		code, _, errs := runDB(t, db, tt.args...)
		if code != tt.code || !strings.Contains(errs, tt.msg) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tt.args, code, errs, tt.code, tt.msg)
		}
	}
}

// A pofo plan stored by release 0.1 lost its transfers: simulate says so instead of
// reporting a budget overflow.
func TestSimulateReleasePofoPlan(t *testing.T) {
	db := t.TempDir() + "/s.db"
	b, err := readFile("../../testdata/store/release-0.1.db")
	if err != nil {
		t.Fatal(err)
	}
	if err := writeFile(db, b); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runDB(t, db, "simulate", "--plan-id", "3")
	if code != 2 || !strings.Contains(errs, "migration 0003") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if code, out, errs := runDB(t, db, "simulate", "--plan-id", "1"); code != 0 {
		t.Fatalf("release rotor plan: exit %d\n%s%s", code, out, errs)
	}
	// The release's parameters (the --budget text, no source) read as the service's.
	if code, out, errs := runDB(t, db, "show-plan", "2"); code != 0 || !strings.Contains(out, "request     budget min, from cli\n") {
		t.Fatalf("release sequential plan: exit %d\n%s%s", code, out, errs)
	}
}

func readFile(path string) ([]byte, error) { return os.ReadFile(path) }

func writeFile(path string, b []byte) error { return os.WriteFile(path, b, 0o644) }
