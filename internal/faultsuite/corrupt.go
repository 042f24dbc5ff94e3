package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/chainplan/chainplan/store"
)

// damage is one way a database file can be broken.
type damage struct {
	name  string
	apply func(data []byte, rng *rand.Rand, junk []byte) []byte
}

// sqlitePage is the page size of the stores chainplan creates (SQLite's default).
const sqlitePage = 4096

var damages = []damage{
	{"truncated to half", func(d []byte, _ *rand.Rand, _ []byte) []byte { return d[:len(d)/2+100] }},
	{"truncated to its first page", func(d []byte, _ *rand.Rand, _ []byte) []byte { return d[:sqlitePage] }},
	{"a page of random bytes in the middle", func(d []byte, rng *rand.Rand, _ []byte) []byte {
		at := len(d) / 2 / sqlitePage * sqlitePage
		for i := at; i < at+sqlitePage; i++ {
			d[i] = byte(rng.IntN(256))
		}
		return d
	}},
	{"random bytes over the header", func(d []byte, rng *rand.Rand, _ []byte) []byte {
		for i := range 100 {
			d[i] = byte(rng.IntN(256))
		}
		return d
	}},
	{"not a database (a profile file)", func(_ []byte, _ *rand.Rand, junk []byte) []byte { return junk }},
	{"empty (zero bytes)", func([]byte, *rand.Rand, []byte) []byte { return nil }},
}

// outcome is what one command did on a damaged or full store.
type outcome struct {
	store, command string
	exit           int
	message        string // the first line of standard error
	namesFile      bool   // the message names the database
	panicked       bool   // standard error shows a Go panic or a stack trace
	unchanged      string // "yes" when the file is as it was, "no", "" when not checked
	ok             bool   // the outcome is what the suite requires
}

// damageCommands are the commands run on every damaged file: reads, a plan recorded,
// an ingest, a query, and a copy from it.
func damageCommands(newProfile string) [][]string {
	return [][]string{
		{"profiles"},
		{"show", "1"},
		{"solve", "--run", "1", "--budget", "min"},
		{"ingest", newProfile},
		{"sql", "SELECT count(*) FROM measurements"},
		{"migrate-store", "--from", "{db}", "--to", "{dir}/copy.db"},
	}
}

// corruptCases damages copies of a store in each way and runs each command on them. A
// command may succeed when the damage is where it does not read; one that fails must exit
// with status 2, name the file, show no Go panic, and leave the file as it was.
func (e *env) corruptCases(ctx context.Context, seed uint64) ([]outcome, error) {
	base := target{sqliteBackend, filepath.Join(e.dir, "damage-base.db")}
	var junk []byte
	for _, shape := range [][2]int{{120, 20}, {40, 10}, {10, 4}} {
		f, err := e.profile(shape[0], shape[1])
		if err != nil {
			return nil, err
		}
		if _, err := e.must(base, "ingest", f.path); err != nil {
			return nil, err
		}
		if junk == nil {
			if junk, err = os.ReadFile(f.path); err != nil {
				return nil, err
			}
		}
	}
	if _, err := e.must(base, "solve", "--run", "1", "--budget", "min"); err != nil {
		return nil, err
	}
	clean, err := os.ReadFile(base.where)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(base.where + "-wal"); err == nil && st.Size() > 0 {
		return nil, fmt.Errorf("%s-wal holds %d bytes after the last process closed the store", base.where, st.Size())
	}
	fresh, err := e.profile(8, 2)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(seed, 0xdead))
	var out []outcome
	for i, d := range damages {
		dir := filepath.Join(e.dir, fmt.Sprintf("damage-%d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		path := filepath.Join(dir, "chainplan.db")
		for _, args := range damageCommands(fresh.path) {
			// Each command gets the damaged file afresh: one command's writes do not
			// change what the next one sees.
			data := d.apply(bytes.Clone(clean), rng, junk)
			for _, s := range []string{"", "-wal", "-shm"} {
				os.Remove(path + s)
			}
			os.Remove(filepath.Join(dir, "copy.db"))
			if err := os.WriteFile(path, data, 0o644); err != nil {
				return nil, err
			}
			args = expand(args, path, dir)
			cmd := e.command(target{sqliteBackend, path}, args...)
			if args[0] == "migrate-store" {
				cmd = e.commandNoDB(args...)
			}
			res, err := e.execute(ctx, cmd, target{}, never, false)
			if err != nil {
				return nil, err
			}
			after, _ := os.ReadFile(path)
			o := judge(d.name, strings.Join(args, " "), path, res)
			o.command = strings.ReplaceAll(o.command, e.dir, "$TMP")
			o.message = strings.ReplaceAll(o.message, e.dir, "$TMP")
			same := sha256.Sum256(after) == sha256.Sum256(data)
			o.unchanged = yesNo(same)
			o.ok = o.ok && (res.exit == 0 || same)
			out = append(out, o)
		}
	}
	return out, nil
}

// judge reads a command's result on a damaged or full store: success, or status 2 with a
// message naming the database; never a panic.
func judge(label, command, path string, res runResult) outcome {
	if store.IsPostgres(path) {
		path = store.RedactDSN(path) // as messages name it
	}
	o := outcome{store: label, command: strings.ReplaceAll(command, path, "DB"), exit: res.exit,
		message:   strings.ReplaceAll(firstLine(res.stderr), path, "DB"),
		namesFile: strings.Contains(res.stderr, path) || strings.Contains(res.stderr, filepath.Dir(path)),
		panicked: strings.Contains(res.stderr, "panic") || strings.Contains(res.stderr, "goroutine ") ||
			strings.Contains(res.stderr, "SIGSEGV") || strings.Contains(res.stderr, "SIGBUS")}
	o.ok = !res.killed && !o.panicked && (res.exit == 0 || res.exit == 2 && o.namesFile)
	return o
}

func expand(args []string, db, dir string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = strings.ReplaceAll(strings.ReplaceAll(a, "{db}", db), "{dir}", dir)
	}
	return out
}
