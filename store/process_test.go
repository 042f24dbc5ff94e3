package store_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chainplan/chainplan/internal/pgtest"
	"github.com/chainplan/chainplan/store"
)

// The tests in this file run the test binary again as helper processes, selected by
// these environment variables.
const (
	envHelper   = "CHAINPLAN_STORE_HELPER" // "ingest" or "hang"
	envDB       = "CHAINPLAN_STORE_HELPER_DB"
	envProfiles = "CHAINPLAN_STORE_HELPER_PROFILES" // comma-separated sampleProfile numbers
	envShape    = "CHAINPLAN_STORE_HELPER_SHAPE"    // "stages,reps"
)

func TestMain(m *testing.M) {
	switch os.Getenv(envHelper) {
	case "":
		code := m.Run()
		cleanupBench()
		if err := pgtest.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		os.Exit(code)
	case "ingest":
		os.Exit(helperIngest(false))
	case "hang":
		os.Exit(helperIngest(true))
	default:
		fmt.Fprintf(os.Stderr, "unknown helper %q\n", os.Getenv(envHelper))
		os.Exit(2)
	}
}

// helperIngest opens the database and ingests the profiles the environment names,
// printing "new RUN" or "existing RUN" per profile. With hang set, it stops for good in
// the middle of the first ingest transaction after printing "HALF".
func helperIngest(hang bool) int {
	var stages, reps int
	if _, err := fmt.Sscanf(os.Getenv(envShape), "%d,%d", &stages, &reps); err != nil {
		fmt.Fprintln(os.Stderr, "bad shape:", err)
		return 2
	}
	if hang {
		store.SetTestHook(func(point string) {
			if point == "insert measurements half" {
				fmt.Println("HALF")
				select {} // wait for SIGKILL
			}
		})
	}
	ctx := context.Background()
	db, err := store.Open(ctx, os.Getenv(envDB), store.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer db.Close()
	for _, s := range strings.Split(os.Getenv(envProfiles), ",") {
		i, err := strconv.Atoi(s)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bad profile number:", err)
			return 2
		}
		res, err := db.Ingest(ctx, sampleProfile(i, stages, reps))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if res.Existing {
			fmt.Printf("existing %d\n", res.RunID)
		} else {
			fmt.Printf("new %d\n", res.RunID)
		}
	}
	return 0
}

// helper returns a command running this test binary as a helper.
func helper(mode, db, profiles string, stages, reps int) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envHelper+"="+mode, envDB+"="+db, envProfiles+"="+profiles,
		fmt.Sprintf("%s=%d,%d", envShape, stages, reps))
	return cmd
}

// TestConcurrentIngestProcesses starts eight processes at once on a database that does
// not exist yet: seven each ingest four profiles of their own and one profile they all
// share; the eighth is killed (SIGKILL) in the middle of its first ingest. Every row of
// the seven must arrive exactly once, the shared profile must be stored once, nothing of
// the killed process's profile may remain, no survivor may fail (in particular not with
// "database is locked"), and the killed profile goes in afterwards.
func TestConcurrentIngestProcesses(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		const procs, each = 8, 4
		stages, reps := 100, 20 // 2,020 measurement rows per profile
		if testing.Short() {
			stages, reps = 40, 10
		}
		target := b.target(t)
		const shared, killed = 9999, 7777
		cmds := make([]*exec.Cmd, procs-1)
		outs := make([]*bytes.Buffer, procs-1)
		errs := make([]*bytes.Buffer, procs-1)
		for p := range procs - 1 {
			var list []string
			for k := range each {
				list = append(list, strconv.Itoa(100*p+k))
			}
			// The shared profile goes first for half of the processes, last for the others.
			if p%2 == 0 {
				list = append([]string{strconv.Itoa(shared)}, list...)
			} else {
				list = append(list, strconv.Itoa(shared))
			}
			cmds[p] = helper("ingest", target, strings.Join(list, ","), stages, reps)
			outs[p], errs[p] = new(bytes.Buffer), new(bytes.Buffer)
			cmds[p].Stdout, cmds[p].Stderr = outs[p], errs[p]
		}
		// The killed process's profile has more rows than the others, so that it is still
		// writing while they are.
		victim := helper("hang", target, strconv.Itoa(killed), 3*stages, reps)
		var victimErr bytes.Buffer
		victim.Stderr = &victimErr
		half := hangingLine(t, victim)
		for _, c := range cmds {
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
		}
		waitHalf(t, victim, half, &victimErr)
		if err := victim.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = victim.Wait() // "signal: killed"
		newShared := 0
		for p, c := range cmds {
			if err := c.Wait(); err != nil {
				t.Errorf("process %d: %v\nstderr: %s", p, err, errs[p])
			}
			if strings.Contains(errs[p].String(), "locked") {
				t.Errorf("process %d reported a lock: %s", p, errs[p])
			}
			lines := strings.Fields(outs[p].String())
			if got, want := len(lines), 2*(each+1); got != want {
				t.Fatalf("process %d printed %q, want %d results", p, outs[p], each+1)
			}
			if p%2 == 0 && lines[0] == "new" || p%2 == 1 && lines[2*each] == "new" {
				newShared++
			}
		}
		if t.Failed() {
			return
		}
		if newShared != 1 {
			t.Fatalf("the shared profile was stored as new by %d processes, want 1", newShared)
		}
		db := mustOpen(t, target)
		perProfile := int64((stages + 1) * reps)
		wantRuns := int64((procs-1)*each + 1)
		for q, want := range map[string]int64{
			"SELECT count(*) FROM runs":                                              wantRuns,
			"SELECT count(DISTINCT content_sha256) FROM runs":                        wantRuns,
			"SELECT count(*) FROM stages":                                            wantRuns * int64(stages+1),
			"SELECT count(*) FROM measurements":                                      wantRuns * perProfile,
			"SELECT count(*) FROM runs WHERE file_bytes = 0":                         0,
			"SELECT count(*) FROM runs WHERE num_stages = " + strconv.Itoa(3*stages): 0, // the killed one
		} {
			if n := count(t, db, q); n != want {
				t.Errorf("%s = %d, want %d", q, n, want)
			}
		}
		assertIntact(t, b, db)
		res, err := db.Ingest(context.Background(), sampleProfile(killed, 3*stages, reps))
		if err != nil || res.Existing || res.Rows != (3*stages+1)*reps {
			t.Fatalf("Ingest of the killed process's profile = %+v, %v; want a new run with %d rows", res, err, (3*stages+1)*reps)
		}
	})
}

// hangingLine starts the first line of cmd's standard output on its way to the returned
// channel; waitHalf reads it.
func hangingLine(t *testing.T, cmd *exec.Cmd) <-chan string {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(out)
		s.Scan()
		line <- s.Text()
	}()
	return line
}

// waitHalf waits until a "hang" helper is in the middle of its ingest transaction.
func waitHalf(t *testing.T, cmd *exec.Cmd, line <-chan string, stderr *bytes.Buffer) {
	t.Helper()
	select {
	case l := <-line:
		if l != "HALF" {
			cmd.Process.Kill()
			t.Fatalf("helper printed %q, want HALF; stderr: %s", l, stderr.String())
		}
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("helper never reached the middle of its ingest; stderr: %s", stderr.String())
	}
}

// assertIntact checks that no row lost what it references (and, on SQLite, the file's
// integrity and foreign keys).
func assertIntact(t *testing.T, b testBackend, db *store.DB) {
	t.Helper()
	for _, q := range []string{
		"SELECT count(*) FROM stages s LEFT JOIN runs r ON r.run_id = s.run_id WHERE r.run_id IS NULL",
		"SELECT count(*) FROM measurements m LEFT JOIN stages s ON s.run_id = m.run_id AND s.stage_index = m.stage_index WHERE s.run_id IS NULL",
		"SELECT count(*) FROM runs r WHERE num_stages + has_loss <> (SELECT count(*) FROM stages s WHERE s.run_id = r.run_id)",
		"SELECT count(*) FROM runs r WHERE (num_stages + has_loss) * reps <> (SELECT count(*) FROM measurements m WHERE m.run_id = r.run_id)",
	} {
		if n := count(t, db, q); n != 0 {
			t.Fatalf("%s = %d, want 0", q, n)
		}
	}
	if b.postgres() {
		return
	}
	_, rows, err := queryAll(context.Background(), db, "PRAGMA integrity_check")
	if err != nil || len(rows) != 1 || rows[0][0] != "ok" {
		t.Fatalf("integrity_check: %v %v", rows, err)
	}
	_, rows, err = queryAll(context.Background(), db, "PRAGMA foreign_key_check")
	if err != nil || len(rows) != 0 {
		t.Fatalf("foreign_key_check: %v %v", rows, err)
	}
}

// TestKilledIngest kills a process with SIGKILL in the middle of an ingest transaction:
// the database stays consistent, keeps what was committed before, holds nothing of the
// interrupted profile, and takes the same profile again.
func TestKilledIngest(t *testing.T) {
	eachBackend(t, func(t *testing.T, b testBackend) {
		ctx := context.Background()
		target := b.target(t)
		db := mustOpen(t, target)
		if _, err := db.Ingest(ctx, sampleProfile(1, 10, 2)); err != nil { // committed before the crash
			t.Fatal(err)
		}
		const stages, reps = 300, 20 // 6,020 rows: the kill comes after ~3,000 are written
		cmd := helper("hang", target, "7", stages, reps)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		waitHalf(t, cmd, hangingLine(t, cmd), &stderr)
		// While the helper is in the middle of its transaction, readers still read.
		if n := count(t, db, "SELECT count(*) FROM runs"); n != 1 {
			t.Fatalf("%d runs visible during the other process's ingest, want 1", n)
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait() // "signal: killed"
		db.Close()

		db = mustOpen(t, target)
		assertIntact(t, b, db)
		for table, want := range map[string]int64{"runs": 1, "stages": 11, "measurements": 22} {
			if n := count(t, db, "SELECT count(*) FROM "+table); n != want {
				t.Fatalf("%s: %d rows after the crash, want %d", table, n, want)
			}
		}
		res, err := db.Ingest(ctx, sampleProfile(7, stages, reps))
		if err != nil {
			t.Fatalf("Ingest after the crash: %v", err)
		}
		if res.Existing || res.Rows != (stages+1)*reps {
			t.Fatalf("Ingest after the crash = %+v, want a new run with %d rows", res, (stages+1)*reps)
		}
		assertIntact(t, b, db)
	})
}
