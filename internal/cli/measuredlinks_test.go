package cli

import (
	"database/sql"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chainplan/chainplan/planner/amp"
	"github.com/chainplan/chainplan/store"
)

// search3d --run plans on the link bandwidth measured with the run and says so (a note in
// text, measured_links in JSON); --nominal-links keeps the cluster file's; an absurd stored
// value is bad input (exit 2) naming its row.
func TestSearch3DMeasuredLinksCLI(t *testing.T) {
	db := filepath.Join(t.TempDir(), "c.db")
	if code, _, errs := run(t, "--db", db, "ingest", parallelArrow); code != 0 {
		t.Fatalf("ingest: %s", errs)
	}
	st, err := store.Open(t.Context(), db, store.Options{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	err = st.RecordBandwidth(t.Context(), &store.Bandwidth{RunID: 1, BytesPerS: 1.25e8, Device: "cpu", Method: "gloo all-reduce",
		Link: store.LinkIntra})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"--db", db, "search3d", "--run", "1", "--cluster", clusters + "cpu-4.yaml", "--global-batch", "32",
		"--top-k", "-1", "--memory-check", "off"}
	search := func(extra ...string) amp.Result {
		t.Helper()
		code, out, errs := run(t, append(append([]string{}, args...), extra...)...)
		if code != 0 {
			t.Fatalf("search3d %v: exit %d: %s", extra, code, errs)
		}
		var r amp.Result
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	measured, nominal := search(), search("--nominal-links")
	if len(measured.MeasuredLinks) != 1 || measured.MeasuredLinks[0].MeasuredBytesPerS != 1.25e8 ||
		measured.MeasuredLinks[0].NominalBytesPerS != 1.25e9 || len(nominal.MeasuredLinks) != 0 {
		t.Fatalf("measured_links: %+v with the row, %+v with --nominal-links", measured.MeasuredLinks, nominal.MeasuredLinks)
	}
	if measured.Candidates[len(measured.Candidates)-1].IterationTimeS <= nominal.Candidates[len(nominal.Candidates)-1].IterationTimeS {
		t.Fatal("the slowest candidate is no slower at a tenth of the bandwidth")
	}
	code, out, _ := run(t, append(append([]string{}, args...), "--format", "text")...)
	if code != 0 || !strings.Contains(out, "note: link bandwidths measured with run 1") || !strings.Contains(out, "0.125 GB/s") {
		t.Fatalf("text output does not name the measured link:\n%s", out)
	}
	raw, err := sql.Open("sqlite3", db)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(`INSERT INTO bandwidths (run_id, measured_at, bandwidth_bytes_per_s, device, method, link)
		VALUES (1, '2030-01-01T00:00:00Z', ?, 'cpu', 'hand', 'intra')`, math.Inf(1)); err != nil {
		t.Fatal(err)
	}
	code, _, errs := run(t, args...)
	if code != exitBadInput || !strings.Contains(errs, "measured bandwidth 2 ") {
		t.Fatalf("an infinite stored bandwidth: exit %d: %s", code, errs)
	}
	if code, _, errs := run(t, append(append([]string{}, args...), "--nominal-links")...); code != 0 {
		t.Fatalf("--nominal-links with an absurd row: exit %d: %s", code, errs)
	}
}
