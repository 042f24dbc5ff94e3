package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/chainplan/chainplan/internal/cli"
	"github.com/chainplan/chainplan/internal/pgtest"
)

// envAsCLI makes the test binary run as the chainplan program, so that the smoke test
// kills real chainplan processes without building one.
const envAsCLI = "CHAINPLAN_FAULTSUITE_AS_CLI"

func TestMain(m *testing.M) {
	if os.Getenv(envAsCLI) == "1" {
		os.Exit(cli.Run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(pgtest.Main(m))
}

// smokeConfig is a small run of the suite on this test binary as chainplan.
func smokeConfig(backends ...string) config {
	return config{cli: []string{os.Args[0]}, cliEnv: []string{envAsCLI + "=1"}, kills: 2,
		cal: calibration{watched: 1, plain: 1}, seed: 1, backends: backends,
		ingestShapes: [][2]int{{30, 5}, {10, 3}, {4, 2}}, planStages: []int{20, 20}}
}

// TestKillSmoke runs the kill part of `make fault` with a kill or two per command, so
// that its mechanism (the kills, the probes, the checks) cannot rot between fault runs:
// on SQLite, and with -short off on PostgreSQL too. Every check must pass.
func TestKillSmoke(t *testing.T) {
	backends, kills := []string{sqliteBackend}, 1
	if !testing.Short() {
		backends, kills = append(backends, postgresBackend), 2
	}
	cfg := smokeConfig(backends...)
	cfg.parts, cfg.kills = []string{"kills"}, kills
	var out bytes.Buffer
	failures, err := run(context.Background(), cfg, &out)
	if err != nil || failures != 0 {
		t.Fatalf("%d failures, %v:\n%s", failures, err, out.String())
	}
	if !strings.Contains(out.String(), "| ingest | sqlite |") {
		t.Fatalf("no figures:\n%s", out.String())
	}
}

// TestDamageSmoke runs the damaged-file cases, and the full-disk cases where this
// process may mount a tmpfs (root).
func TestDamageSmoke(t *testing.T) {
	for _, part := range []string{"corrupt", "full"} {
		cfg := smokeConfig(sqliteBackend)
		cfg.parts = []string{part}
		var out bytes.Buffer
		failures, err := run(context.Background(), cfg, &out)
		if part == "full" && errors.Is(err, syscall.EPERM) {
			t.Skipf("cannot mount a tmpfs here: %v", err)
		}
		if err != nil || failures != 0 {
			t.Fatalf("%s: %d failures, %v:\n%s", part, failures, err, out.String())
		}
	}
}
