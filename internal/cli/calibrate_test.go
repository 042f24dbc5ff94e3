package cli

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chainplan/chainplan/planner/amp"
	"github.com/chainplan/chainplan/planner/calibration"
)

// Runs recorded against stored search3d advice calibrate its cost model; search3d
// --calibration applies the fit to later predictions on the same cluster, and refuses
// another cluster's.
func TestAdviceCalibrateAndApply(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "c.db")
	if code, _, errs := run(t, "--db", db, "ingest", parallelArrow); code != 0 {
		t.Fatalf("ingest: %s", errs)
	}
	search := func(extra ...string) (int, amp.Result, string) {
		args := append([]string{"--db", db, "search3d", "--run", "1", "--cluster", clusters + "a100-64.yaml", "--global-batch", "256",
			"--top-k", "6"}, extra...)
		code, out, errs := run(t, args...)
		var r amp.Result
		if code == 0 {
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatal(err)
			}
		}
		return code, r, errs
	}
	code, before, errs := search()
	if code != 0 || len(before.Candidates) != 6 {
		t.Fatalf("search3d: exit %d: %s", code, errs)
	}
	// Too few measured candidates to fit.
	if code, _, errs := run(t, "--db", db, "advice", "calibrate", "1"); code != exitBadInput || !strings.Contains(errs, "at least 2") {
		t.Fatalf("calibrate without runs: exit %d: %s", code, errs)
	}
	// "Measured" runs made by a known calibration: computation 3× slower, communication
	// twice as fast, 0.2 s per iteration of overhead.
	want := calibration.Calibration{ComputeScale: 3, CommScale: 0.5, OverheadS: 0.2}
	for i, c := range before.Candidates {
		if c.CommS <= 0 {
			t.Fatalf("candidate %d has no communication (%+v): the fit cannot tell the scales apart", i, c)
		}
		code, _, errs := run(t, "--db", db, "advice", "record", "1", "--candidate", fmt.Sprint(i), "--iteration-time",
			fmt.Sprint(want.Predict(c.ComputeS, c.CommS)))
		if code != 0 {
			t.Fatalf("record: %s", errs)
		}
	}
	file := filepath.Join(dir, "cal.json")
	if code, _, errs := run(t, "--db", db, "advice", "calibrate", "1", "-o", file); code != 0 || !strings.Contains(errs, "6 measured candidates") {
		t.Fatalf("calibrate: exit %d: %s", code, errs)
	}
	got, err := calibration.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(got.ComputeScale-3) > 1e-6 || math.Abs(got.CommScale-0.5) > 1e-6 || math.Abs(got.OverheadS-0.2) > 1e-6 ||
		got.Cluster != before.Cluster {
		t.Fatalf("calibration %+v, want %+v on %s", got, want, before.Cluster)
	}
	// Applied: every prediction is the calibrated one (the scales change no cut here only
	// if the ranking allows; compare by degrees).
	code, after, errs := search("--calibration", file)
	if code != 0 {
		t.Fatalf("search3d --calibration: exit %d: %s", code, errs)
	}
	type key struct{ pp, dp, tmp, mbs int }
	old := map[key]amp.Candidate{}
	for _, c := range before.Candidates {
		old[key{c.PP, c.DP, c.TMP, c.MBS}] = c
	}
	matched := 0
	for _, c := range after.Candidates {
		o, ok := old[key{c.PP, c.DP, c.TMP, c.MBS}]
		if !ok || fmt.Sprint(o.Boundaries) != fmt.Sprint(c.Boundaries) {
			continue
		}
		matched++
		if p := want.Predict(o.ComputeS, o.CommS); math.Abs(c.IterationTimeS-p) > 1e-6*p || c.OverheadS != got.OverheadS {
			t.Errorf("pp=%d dp=%d tmp=%d mbs=%d: calibrated %v s, want %v", c.PP, c.DP, c.TMP, c.MBS, c.IterationTimeS, p)
		}
	}
	if matched == 0 {
		t.Fatalf("no candidate of the calibrated search kept its degrees and cut")
	}
	// A calibration of the measured runs against the calibrated advice is the same one.
	for i, c := range after.Candidates {
		o := old[key{c.PP, c.DP, c.TMP, c.MBS}]
		if o.Rank == 0 || fmt.Sprint(o.Boundaries) != fmt.Sprint(c.Boundaries) {
			continue
		}
		if code, _, errs := run(t, "--db", db, "advice", "record", "2", "--candidate", fmt.Sprint(i), "--iteration-time",
			fmt.Sprint(want.Predict(o.ComputeS, o.CommS))); code != 0 {
			t.Fatalf("record: %s", errs)
		}
	}
	if code, out, errs := run(t, "--db", db, "advice", "calibrate", "2"); code != 0 || !strings.Contains(out, `"compute_scale": 3`) &&
		!strings.Contains(out, `"compute_scale": 2.9999`) {
		t.Fatalf("calibrate the calibrated advice: exit %d: %s\n%s", code, errs, out)
	}
	// Another cluster's calibration, and a file that is not one, are refused.
	other := strings.Replace(string(mustRead(t, file)), before.Cluster, "elsewhere", 1)
	otherFile := filepath.Join(dir, "other.json")
	if err := os.WriteFile(otherFile, []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := search("--calibration", otherFile); code != exitBadInput || !strings.Contains(errs, "elsewhere") {
		t.Errorf("another cluster's calibration: exit %d: %s", code, errs)
	}
	if code, _, errs := search("--calibration", clusters+"a100-64.yaml"); code != exitBadInput || !strings.Contains(errs, "--calibration") {
		t.Errorf("a file that is no calibration: exit %d: %s", code, errs)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
