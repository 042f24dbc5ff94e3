package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A damaged database file, or a file that is no database, is bad input: every command
// exits 2 naming the file, with a hint, and leaves the file as it was (before, they
// exited 1, "internal error", and an empty file was silently made a new database by
// commands that only read).
func TestDamagedDatabaseFile(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "c.db")
	mustIngest(t, db, writeProfile(t, dir, "a.arrow", syntheticProfile("alpha", 40, 5, 1)))
	clean, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string][]byte{
		"truncated":     clean[:len(clean)/2+100],
		"not SQLite":    []byte(strings.Repeat("not a database\n", 500)),
		"empty":         nil,
		"header zeroed": append(make([]byte, 100), clean[100:]...),
	}
	for name, data := range cases {
		for _, args := range [][]string{{"profiles"}, {"show", "1"}, {"solve", "--run", "1", "--budget", "min"},
			{"sql", "SELECT 1"}} {
			if err := os.WriteFile(db, data, 0o644); err != nil {
				t.Fatal(err)
			}
			code, _, errs := runDB(t, db, args...)
			if code != exitBadInput || !strings.Contains(errs, db) || strings.Contains(errs, "goroutine") {
				t.Errorf("%s, %v: exit %d, want %d naming %s:\n%s", name, args, code, exitBadInput, db, errs)
			}
			if name != "empty" && !strings.Contains(errs, "hint: ") {
				t.Errorf("%s, %v: no hint:\n%s", name, args, errs)
			}
			if now, _ := os.ReadFile(db); string(now) != string(data) {
				t.Errorf("%s, %v: the file changed", name, args)
			}
		}
	}
}
