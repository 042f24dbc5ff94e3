package store_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/chainplan/chainplan/store"
)

// column is one column of a table or view as a backend reports it.
type column struct {
	relation, kind, name, class string // kind: "table" or "view"; class: INTEGER, REAL, TEXT
}

// schemaOf lists the tables and views of a store and their columns, in order, with each
// table column's type class (SQLite's declared type; PostgreSQL's type, mapped).
func schemaOf(t *testing.T, b testBackend, db *store.DB) []column {
	t.Helper()
	q := `SELECT m.name, m.type, p.name, p.type FROM sqlite_schema m JOIN pragma_table_info(m.name) p
		WHERE m.type IN ('table', 'view') AND m.name NOT LIKE 'sqlite_%' ORDER BY m.name, p.cid`
	if b.postgres() {
		q = `SELECT c.table_name, CASE t.table_type WHEN 'VIEW' THEN 'view' ELSE 'table' END, c.column_name, c.data_type
			FROM information_schema.columns c JOIN information_schema.tables t USING (table_schema, table_name)
			WHERE c.table_schema = current_schema() AND c.table_name <> 'chainplan_schema'
			ORDER BY c.table_name, c.ordinal_position`
	}
	_, rows, err := queryAll(context.Background(), db, q)
	if err != nil {
		t.Fatal(err)
	}
	classes := map[string]string{"INTEGER": "INTEGER", "bigint": "INTEGER", "integer": "INTEGER",
		"REAL": "REAL", "double precision": "REAL", "TEXT": "TEXT", "text": "TEXT"}
	var out []column
	for _, r := range rows {
		c := column{relation: r[0].(string), kind: r[1].(string), name: r[2].(string)}
		if c.kind == "table" {
			if c.class = classes[r[3].(string)]; c.class == "" {
				t.Fatalf("%s: column %s.%s has type %q, which is none of INTEGER, REAL, TEXT", b.name, c.relation, c.name, r[3])
			}
		}
		out = append(out, c)
	}
	return out
}

// TestDialectsAgree opens a new store on each backend and compares what the migrations
// made: the same tables and views, the same columns in the same order, the same type
// classes; and docs/sql.md documents every table with each of its columns, and every view.
func TestDialectsAgree(t *testing.T) {
	var first []column
	var firstName string
	for _, b := range selectedBackends() {
		got := schemaOf(t, b, b.open(t))
		if len(got) == 0 {
			t.Fatalf("%s: no tables", b.name)
		}
		if first == nil {
			first, firstName = got, b.name
			continue
		}
		if fmt.Sprint(got) != fmt.Sprint(first) {
			t.Fatalf("the schemas differ:\n%-8s %v\n%-8s %v", firstName, first, b.name, got)
		}
	}
	doc, err := os.ReadFile("../docs/sql.md")
	if err != nil {
		t.Fatal(err)
	}
	sections := docSections(string(doc))
	views := sections["## Views"]
	relations := map[string]string{}
	for _, c := range first {
		relations[c.relation] = c.kind
		if c.kind == "view" {
			continue
		}
		section, ok := sections["### `"+c.relation+"`"]
		if !ok {
			t.Errorf("docs/sql.md has no section \"### `%s`\"", c.relation)
			continue
		}
		if !strings.Contains(section, "`"+c.name+"`") {
			t.Errorf("docs/sql.md does not document column %s.%s", c.relation, c.name)
		}
	}
	for name, kind := range relations {
		if kind == "view" && !strings.Contains(views, "`"+name+"`") {
			t.Errorf("docs/sql.md, \"## Views\", does not document view %s", name)
		}
	}
	for _, name := range documented {
		if _, ok := relations[name]; !ok {
			t.Errorf("docs/sql.md documents %s, which the schema lacks", name)
		}
	}
	var headings []string
	for h := range sections {
		if strings.HasPrefix(h, "### `") {
			headings = append(headings, h)
		}
	}
	slices.Sort(headings)
	for _, h := range headings {
		if name := strings.Trim(strings.TrimPrefix(h, "### "), "`"); relations[name] != "table" {
			t.Errorf("docs/sql.md has a section %s for no table of the schema", h)
		}
	}
}

var docHeading = regexp.MustCompile("(?m)^(##+) (.*)$")

// docSections splits a markdown document at its ## and ### headings: heading (as
// written, up to the first ':') → the text under it, up to the next heading.
func docSections(doc string) map[string]string {
	out := map[string]string{}
	hs := docHeading.FindAllStringSubmatchIndex(doc, -1)
	for i, h := range hs {
		end := len(doc)
		if i+1 < len(hs) {
			end = hs[i+1][0]
		}
		title := doc[h[2]:h[3]] + " " + strings.SplitN(doc[h[4]:h[5]], ":", 2)[0]
		out[title] = doc[h[1]:end]
	}
	return out
}
