// Command faultsuite is chainplan's fault suite (`make fault`, docs/TESTING.md): it runs
// the chainplan program as real processes and
//
//   - kills `chainplan ingest`, `migrate-store`, `solve --run` and `pipeline --run` with
//     SIGKILL at seeded random moments before, inside and after their write transactions,
//     on SQLite and on PostgreSQL, then checks the store (nothing partial, nothing lost),
//     runs the command again and checks that the store converged to what it must hold;
//   - runs the commands on damaged database files (truncated, overwritten in the middle,
//     not a database, empty) and on a full disk (a small tmpfs; a PostgreSQL tablespace
//     on one), and checks that they fail clearly (exit status, a message naming the file,
//     no Go panic) and lose nothing already stored;
//
// and prints the figures as Markdown. It exits 1 when any check failed.
//
//	go build -o bin/chainplan ./cmd/chainplan
//	go run ./internal/faultsuite -bin bin/chainplan -kills 30
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chainplan/chainplan/internal/pgtest"
)

// config is what one run of the suite does.
type config struct {
	cli      []string // the chainplan program (and arguments before the command's)
	cliEnv   []string
	kills    int // per command and backend
	cal      calibration
	seed     uint64
	backends []string
	parts    []string // "kills", "corrupt", "full"
	// shapes of the three files each ingest trial stores (stages, repetitions).
	ingestShapes [][2]int
	planStages   []int // the stored runs plan trials plan
}

func main() {
	bin := flag.String("bin", "bin/chainplan", "the chainplan program to run")
	kills := flag.Int("kills", 30, "kills per command and backend")
	seed := flag.Uint64("seed", 1, "seed of the kill moments and of the damage")
	backends := flag.String("backends", "sqlite,postgres", "backends to run on")
	parts := flag.String("parts", "kills,corrupt,full", "parts of the suite to run")
	out := flag.String("o", "", "write the figures to this file as well as to standard output")
	flag.Parse()
	abs, err := filepath.Abs(*bin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "faultsuite:", err)
		os.Exit(2)
	}
	cfg := config{cli: []string{abs}, kills: *kills, seed: *seed, cal: calibration{watched: 3, plain: 3}, backends: strings.Split(*backends, ","),
		parts: strings.Split(*parts, ","), ingestShapes: [][2]int{{120, 20}, {40, 10}, {10, 4}}, planStages: []int{80, 80}}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	w := io.Writer(os.Stdout)
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			fmt.Fprintln(os.Stderr, "faultsuite:", err)
			os.Exit(2)
		}
		defer f.Close()
		w = io.MultiWriter(os.Stdout, f)
	}
	failures, err := run(ctx, cfg, w)
	if err != nil {
		fmt.Fprintln(os.Stderr, "faultsuite:", err)
		os.Exit(1)
	}
	if failures > 0 {
		fmt.Fprintf(os.Stderr, "faultsuite: %d checks failed\n", failures)
		os.Exit(1)
	}
}

// run runs the suite and writes its figures to w; it returns the number of failed checks.
func run(ctx context.Context, cfg config, w io.Writer) (int, error) {
	start := time.Now()
	dir, err := os.MkdirTemp("", "chainplan-fault-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	// The PostgreSQL server (another user) reaches the tablespace of the full-disk cases
	// through it.
	if err := os.Chmod(dir, 0o711); err != nil {
		return 0, err
	}
	e := &env{cli: cfg.cli, cliEnv: cfg.cliEnv, dir: dir}
	if slices.Contains(cfg.backends, postgresBackend) {
		srv, err := pgtest.Open(ctx)
		if err != nil {
			return 0, fmt.Errorf("PostgreSQL: %w", err)
		}
		defer srv.Stop()
		e.pg = srv
		if e.admin, err = pgx.Connect(ctx, srv.AdminDSN); err != nil {
			return 0, fmt.Errorf("PostgreSQL: %w", err)
		}
		defer e.admin.Close(context.Background())
	}
	failures := 0
	if slices.Contains(cfg.parts, "kills") {
		var figs []killFigures
		for _, mk := range []func() workload{
			func() workload { return newIngestLoad(cfg.ingestShapes) },
			func() workload { return &migrateLoad{freshEvery: 5} },
			func() workload { return &planLoad{stages: cfg.planStages} },
			func() workload { return &planLoad{pipeline: true, stages: cfg.planStages} },
		} {
			for _, b := range cfg.backends {
				f := e.killGroup(ctx, mk(), b, cfg.kills, cfg.cal, cfg.seed)
				failures += len(f.failures)
				figs = append(figs, f)
				fmt.Fprintf(os.Stderr, "faultsuite: %s on %s: %d kills, %d failures, %v\n",
					f.command, f.backend, f.kills, len(f.failures), f.elapsed.Round(time.Second))
			}
		}
		writeKillFigures(w, figs)
	}
	if slices.Contains(cfg.parts, "corrupt") {
		outs, err := e.corruptCases(ctx, cfg.seed)
		if err != nil {
			return failures, fmt.Errorf("damaged files: %w", err)
		}
		failures += writeOutcomes(w, "Damaged SQLite files (each command on a fresh copy of the damaged file):", outs)
	}
	if slices.Contains(cfg.parts, "full") {
		var outs []outcome
		if slices.Contains(cfg.backends, sqliteBackend) {
			o, err := e.sqliteFullDisk(ctx)
			if err != nil {
				return failures, fmt.Errorf("full disk (SQLite): %w", err)
			}
			outs = append(outs, o...)
		}
		if slices.Contains(cfg.backends, postgresBackend) {
			o, err := e.postgresFullDisk(ctx)
			if err != nil {
				return failures, fmt.Errorf("full disk (PostgreSQL): %w", err)
			}
			outs = append(outs, o...)
		}
		failures += writeOutcomes(w, "A full disk (SQLite: the store on a tmpfs of 4 MiB; PostgreSQL: its tables in a "+
			"tablespace on a tmpfs of 16 MiB; filled up to 64 KiB free, then to nothing):", outs)
	}
	fmt.Fprintf(w, "\nThe suite took %v.\n", time.Since(start).Round(time.Second))
	return failures, nil
}
