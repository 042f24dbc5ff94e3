package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chainplan/chainplan/internal/service"
)

func TestIngest(t *testing.T) {
	db := filepath.Join(t.TempDir(), "i.db")
	var files []string
	for _, f := range goodProfiles {
		files = append(files, testdataFile(f))
	}
	code, out, errs := runDB(t, db, append([]string{"ingest"}, files...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if got := strings.Count(out, " new "); got != len(files) {
		t.Fatalf("%d files reported new, want %d:\n%s", got, len(files), out)
	}
	// Again: every file is already there, as the same run.
	code, again, errs := runDB(t, db, append([]string{"ingest"}, files...)...)
	if code != 0 || strings.Count(again, " existing ") != len(files) {
		t.Fatalf("second ingest: exit %d\n%s%s", code, again, errs)
	}
	if strings.ReplaceAll(again, "existing", "new     ") != out {
		t.Fatalf("second ingest names other runs:\n%s\nfirst:\n%s", again, out)
	}
	code, out, _ = runDB(t, db, "sql", "--format", "csv", "SELECT count(*), (SELECT count(*) FROM measurements) FROM runs")
	// 5 resnet files of 35 rows, record_mlp of 21 (testdata/profiles/README.md).
	if code != 0 || out != "count(*),(SELECT count(*) FROM measurements)\n6,196\n" {
		t.Fatalf("counts: exit %d\n%s", code, out)
	}
}

func TestIngestBadFiles(t *testing.T) {
	db := filepath.Join(t.TempDir(), "b.db")
	tests := []struct {
		file string
		want string
	}{
		{"bad_version.arrow", "chainplan.profile/v2"},
		{"bad_type.arrow", `column "fwd_time_s": has type utf8`},
		{"bad_nan.arrow", `column "bwd_time_s", row 9 (stage 2, rep 4): NaN`},
		{"bad_truncated.arrow", "truncated"},
		{"bad_corrupt_footer.arrow", "corrupt"},
		{"nope.arrow", "no such file"},
	}
	args := []string{"ingest", testdataFile("resnet_file.arrow")}
	for _, tt := range tests {
		args = append(args, testdataFile(tt.file))
	}
	args = append(args, testdataFile("record_mlp.arrow"))
	code, out, errs := runDB(t, db, args...)
	if code != exitBadInput {
		t.Fatalf("exit %d, want %d\n%s", code, exitBadInput, errs)
	}
	for _, tt := range tests {
		if !strings.Contains(errs, tt.file) || !strings.Contains(errs, tt.want) {
			t.Errorf("stderr does not report %s (%s):\n%s", tt.file, tt.want, errs)
		}
	}
	if !strings.Contains(errs, fmt.Sprintf("%d of %d files not ingested", len(tests), len(tests)+2)) {
		t.Errorf("stderr has no summary:\n%s", errs)
	}
	// The good files around the bad ones are stored.
	if strings.Count(out, " new ") != 2 {
		t.Fatalf("want the 2 good files stored:\n%s", out)
	}
}

func TestIngestJSON(t *testing.T) {
	db := filepath.Join(t.TempDir(), "j.db")
	code, out, _ := runDB(t, db, "ingest", "--format", "json", testdataFile("resnet_file.arrow"), testdataFile("bad_nan.arrow"))
	if code != exitBadInput {
		t.Fatalf("exit %d, want %d", code, exitBadInput)
	}
	var reps []ingestReport
	if err := json.Unmarshal([]byte(out), &reps); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	if len(reps) != 2 || reps[0].RunID != 1 || reps[0].Rows != 35 || reps[0].Stages != 6 || reps[0].Model != "resnet-mini" ||
		reps[1].Error == "" || reps[1].RunID != 0 {
		t.Fatalf("reports %+v", reps)
	}
}

func TestIngestUsage(t *testing.T) {
	db := filepath.Join(t.TempDir(), "u.db")
	for _, args := range [][]string{{"ingest"}, {"ingest", "--format", "xml", testdataFile("resnet_file.arrow")}} {
		if code, _, _ := runDB(t, db, args...); code != exitBadInput {
			t.Errorf("%v: exit %d, want %d", args, code, exitBadInput)
		}
	}
}

// TestHelperProcess is not a test: the tests below run the test binary with this test
// selected and CHAINPLAN_CLI_HELPER=1 to get a chainplan process.
func TestHelperProcess(t *testing.T) {
	if os.Getenv("CHAINPLAN_CLI_HELPER") != "1" {
		t.Skip("helper process for the multi-process tests")
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	os.Exit(Run(context.Background(), args, os.Stdout, os.Stderr))
}

// chainplanProcess returns a command running the CLI in a new process.
func chainplanProcess(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestHelperProcess$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), "CHAINPLAN_CLI_HELPER=1")
	return cmd
}

// TestIngestConcurrentProcesses runs eight `chainplan ingest` processes at once on one new
// database, each with three profiles of its own and one that all share: every row arrives
// exactly once and no process fails.
func TestIngestConcurrentProcesses(t *testing.T) {
	const procs, each = 8, 3
	stages, reps := 200, 20
	if testing.Short() {
		stages, reps = 50, 10
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "shared.db")
	shared := writeProfile(t, dir, "shared.arrow", syntheticProfile("shared", stages, reps, 999))
	cmds := make([]*exec.Cmd, procs)
	stdouts := make([]*bytes.Buffer, procs)
	stderrs := make([]*bytes.Buffer, procs)
	for p := range procs {
		args := []string{"--db", db, "ingest"}
		for k := range each {
			seed := uint64(10*p + k)
			args = append(args, writeProfile(t, dir, fmt.Sprintf("p%d-%d.arrow", p, k), syntheticProfile("m", stages, reps, seed)))
		}
		args = append(args, shared)
		cmds[p] = chainplanProcess(args...)
		stdouts[p], stderrs[p] = new(bytes.Buffer), new(bytes.Buffer)
		cmds[p].Stdout, cmds[p].Stderr = stdouts[p], stderrs[p]
	}
	start := time.Now()
	for _, c := range cmds {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
	}
	newShared := 0
	for p, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Errorf("process %d: %v\n%s", p, err, stderrs[p])
		}
		if strings.Contains(stderrs[p].String(), "locked") {
			t.Errorf("process %d: %s", p, stderrs[p])
		}
		for _, line := range strings.Split(strings.TrimSpace(stdouts[p].String()), "\n") {
			if strings.HasSuffix(line, "shared.arrow") && strings.Contains(line, " new ") {
				newShared++
			}
		}
	}
	t.Logf("8 processes ingested %d profiles in %v", procs*each+1, time.Since(start))
	if t.Failed() {
		return
	}
	if newShared != 1 {
		t.Fatalf("the shared file was stored by %d processes, want 1", newShared)
	}
	runs := int64(procs*each + 1)
	code, out, errs := runDB(t, db, "sql", "--format", "csv",
		"SELECT (SELECT count(*) FROM runs), (SELECT count(DISTINCT content_sha256) FROM runs), (SELECT count(*) FROM measurements)")
	if want := fmt.Sprintf("%d,%d,%d", runs, runs, runs*int64((stages+1)*reps)); code != 0 || !strings.HasSuffix(out, want+"\n") {
		t.Fatalf("counts: exit %d: %s%s, want %s", code, out, errs, want)
	}
}

// BenchmarkIngestFile times what `chainplan ingest` does per file: read an LZ4-compressed
// Arrow profile of 1,000 stages with 20 repetitions (20,020 rows), validate it, aggregate
// it and store it in one transaction. It reports measurement rows per second.
//
//	go test -run='^$' -bench=IngestFile -benchtime=20x ./internal/cli
func BenchmarkIngestFile(b *testing.B) {
	const stages, reps = 1000, 20
	dir := b.TempDir()
	db, err := service.Open(context.Background(), filepath.Join(dir, "bench.db"), service.Options{Create: true})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	rows := 0
	var elapsed time.Duration
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		path := writeProfile(b, dir, fmt.Sprintf("p%d.arrow", i), syntheticProfile("bench", stages, reps, uint64(i)))
		b.StartTimer()
		t0 := time.Now()
		res, _, err := ingestFile(context.Background(), db, path)
		elapsed += time.Since(t0)
		if err != nil || res.Existing {
			b.Fatalf("ingest: %+v, %v", res, err)
		}
		rows += res.Rows
	}
	b.ReportMetric(float64(rows)/elapsed.Seconds(), "rows/s")
}
