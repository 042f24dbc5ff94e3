package cli

import (
	"encoding/csv"
	"path/filepath"
	"strings"
	"testing"
)

func TestShow(t *testing.T) {
	db := filepath.Join(t.TempDir(), "s.db")
	mustIngest(t, db, testdataFile("resnet_file.arrow"), testdataFile("record_mlp.arrow"))
	code, out, errs := runDB(t, db, "show", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"run 1: resnet-mini, 6 stages + loss", "torch 2.15.0+cpu, cpu (Synthetic CPU), float32, batch 8",
		"input [8, 3, 64, 64]", "perf_counter timing, 2 warm-up + 5 repetitions", "conv1", "layer4", "cross_entropy  loss",
		"(7 rows)"} {
		if !strings.Contains(out, want) {
			t.Errorf("show 1 does not contain %q:\n%s", want, out)
		}
	}
	// latest is the record-style run: its unmeasured sizes are NULL.
	code, out, _ = runDB(t, db, "show", "latest", "--format", "csv")
	if code != 0 {
		t.Fatalf("show latest: exit %d", code)
	}
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 || recs[0][8] != "saved_bytes" || recs[1][1] != "embed" || recs[1][8] != "" || recs[1][3] != "7" {
		t.Fatalf("show latest --format csv:\n%s", out)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"show", "9"}, "no run 9"},
		{[]string{"show", "abc"}, "RUN must be a run id"},
		{[]string{"show"}, "show takes one RUN"},
		{[]string{"show", "1", "2"}, "show takes one RUN"},
	} {
		code, _, errs := runDB(t, db, tt.args...)
		if code != exitBadInput || !strings.Contains(errs, tt.want) {
			t.Errorf("%v: exit %d, %q; want exit 2 and %q", tt.args, code, errs, tt.want)
		}
	}
}
