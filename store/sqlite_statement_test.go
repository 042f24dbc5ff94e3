package store

import (
	"errors"
	"strings"
	"testing"
)

// TestSQLiteStatement: where a statement ends, and which $N are placeholders, as SQLite's
// tokenizer reads them.
func TestSQLiteStatement(t *testing.T) {
	for query, want := range map[string]string{
		"SELECT 1":                              "SELECT 1",
		"SELECT 1; ;; -- done\n/* really */":    "SELECT 1; ;; -- done\n/* really */",
		"SELECT 'a;b', \"c;d\", `e;f`, [g;h]":   "SELECT 'a;b', \"c;d\", `e;f`, [g;h]",
		"SELECT 'it''s; $1' -- ; SELECT 2":      "SELECT 'it''s; $1' -- ; SELECT 2",
		"SELECT $2, $1, $10":                    "SELECT ?2, ?1, ?10",
		"SELECT $1abc, a$1, \"$1\", x /* $1 */": "SELECT $1abc, a$1, \"$1\", x /* $1 */",
		"SELECT 'é;' || $1 ;":                   "SELECT 'é;' || ?1 ;",
		"SELECT 1 /* unterminated ; SELECT 2":   "SELECT 1 /* unterminated ; SELECT 2",
		"SELECT 'unterminated ; SELECT 2":       "SELECT 'unterminated ; SELECT 2",
	} {
		got, err := sqliteStatement(query)
		if err != nil || got != want {
			t.Errorf("sqliteStatement(%q) = %q, %v; want %q", query, got, err, want)
		}
	}
	for query, want := range map[string]string{
		"SELECT 1; SELECT 2":          "several statements",
		"SELECT 1 -- x\n; SELECT 2":   "several statements",
		"SELECT 'a'';'; x":            "several statements",
		"SELECT [a;]; SELECT 2":       "several statements",
		"; SELECT 1; SELECT 2 -- end": "several statements",
		"":                            "no statement",
		" ;; -- nothing\n/* */":       "no statement",
	} {
		_, err := sqliteStatement(query)
		if !errors.Is(err, ErrBadQuery) || !strings.Contains(err.Error(), want) {
			t.Errorf("sqliteStatement(%q) = %v; want ErrBadQuery saying %q", query, err, want)
		}
	}
}

// FuzzSQLiteStatement: no text makes the scanner fail other than with ErrBadQuery, and
// what it writes differs from the text only where it turned $N into ?N.
func FuzzSQLiteStatement(f *testing.F) {
	for _, s := range []string{"SELECT 1", "SELECT $1; -- x", "SELECT '$1", "[a;b] $2$3", "/*"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, query string) {
		got, err := sqliteStatement(query)
		if err != nil {
			if !errors.Is(err, ErrBadQuery) {
				t.Fatalf("%q: %v", query, err)
			}
			return
		}
		if len(got) != len(query) || strings.ReplaceAll(got, "?", "$") != strings.ReplaceAll(query, "?", "$") {
			t.Fatalf("%q became %q", query, got)
		}
	})
}
