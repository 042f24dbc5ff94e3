package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReport(t *testing.T) {
	db := plotDB(t)
	out := filepath.Join(t.TempDir(), "report.html")
	code, _, errs := runDB(t, db, "report", "latest", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	// plotDB solves the same request twice: plan 2 is plan 1 stored again, listed once.
	for _, want := range []string{`id="provenance"`, `id="plan-1"`, "Stored again, the same plan, as plan 2.", ">#1<", "chainplan report: run 1"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if strings.Contains(string(data), `id="plan-2"`) {
		t.Error("the report draws plan 2, the same plan as plan 1, a second time")
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"report", "1"}, "-o FILE.html is required"},
		{[]string{"report", "1", "-o", "r.pdf"}, "name a .html file"},
		{[]string{"report", "-o", out}, "report takes one RUN argument"},
		{[]string{"report", "9", "-o", out}, "no run 9"},
		{[]string{"report", "x", "-o", out}, "RUN must be a run id"},
	} {
		code, _, errs := runDB(t, db, tt.args...)
		if code != exitBadInput || !strings.Contains(errs, tt.want) {
			t.Errorf("%v: exit %d, %q; want exit 2 and %q", tt.args, code, errs, tt.want)
		}
	}
}
