package store_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/chainplan/chainplan/store"
)

// TestSQLiteFunctionsOnPostgres compares the SQLite functions that PostgreSQL stores
// define (migrations/postgres/0001_init.sql: json_extract, json_each, json_valid, round of
// a double, date, datetime, strftime) with SQLite's own, on the same inputs: SQLite is the
// oracle. PostgreSQL's results are text where SQLite's are typed (json_extract,
// json_each's value), so values are compared as SQLite's printed as text. The documents
// are compact, as chainplan writes them: PostgreSQL returns a nested array or object as
// it was stored, SQLite minified.
func TestSQLiteFunctionsOnPostgres(t *testing.T) {
	backends := selectedBackends()
	if len(backends) < 2 {
		t.Skip("needs both backends (-store-backends)")
	}
	ctx := context.Background()
	lite, pg := backends[0].open(t), backends[1].open(t)
	docs := []string{
		`{"a":[1,{"b":"x y"}],"c":true,"d":null,"e":1.5,"f":-3,"g":"","h":{"i":[[]]},"j k":"quoted"}`,
		`[{"op":"F_ck","stage":1},{"op":"B","stage":1},3,"s",true,false,null,2.25,[1,2]]`,
		`[16,3,224,224]`, `"text"`, `42`, `{}`, `[]`,
	}
	paths := []string{"$", "$.a", "$.a[0]", "$.a[1].b", "$.c", "$.d", "$.e", "$.f", "$.g", "$.h.i[0]", `$."j k"`,
		"$.missing", "$[0]", "$[0].op", "$[1].stage", "$[4]", "$[5]", "$[6]", "$[7]", "$[99]", "$.a[5]"}
	var exprs []string
	for _, d := range docs {
		for _, p := range paths {
			exprs = append(exprs, fmt.Sprintf("json_extract('%s', '%s')", d, p))
		}
		exprs = append(exprs, fmt.Sprintf("json_valid('%s')", d))
	}
	for _, bad := range []string{"", "{", "[1,]", "{a:1}", "nul", `{"a":1}x`} {
		exprs = append(exprs, fmt.Sprintf("json_valid('%s')", bad))
	}
	rng := rand.New(rand.NewPCG(27, 1))
	for range 300 {
		x := (rng.Float64() - 0.3) * math.Pow(10, float64(rng.IntN(8)-3))
		exprs = append(exprs, fmt.Sprintf("round(CAST(%s AS DOUBLE PRECISION), %d)", strconv.FormatFloat(x, 'g', -1, 64), rng.IntN(5)))
	}
	times := []string{"2025-06-01T12:34:56.789Z", "2025-06-01", "2025-06-01 23:59", "2024-02-29T00:00:00.000Z", "2025-01-31",
		"2025-12-31T23:59:59.999Z", "2025-01-02 03:04:05+02:00", "not a time"}
	mods := []string{"", ", '-30 days'", ", '+1 day'", ", '+36 hours'", ", '-90 minutes'", ", '+61 seconds'",
		", 'start of month'", ", 'start of year', '+1 months'", ", 'start of day', '-1 second'", ", '-1 years'",
		", '+1 month'", ", '-13 months'", ", '+1.5 days'"}
	for _, tm := range times {
		for _, m := range mods {
			exprs = append(exprs, fmt.Sprintf("date('%s'%s)", tm, m), fmt.Sprintf("datetime('%s'%s)", tm, m))
		}
		exprs = append(exprs, fmt.Sprintf("strftime('%%Y-%%m-%%dT%%H:%%M:%%fZ|%%j|%%s|%%w|%%%%', '%s')", tm))
	}
	// date() and friends take text: SQLite's literals are text already, PostgreSQL's
	// are cast so that the literal is not read as a date of its own (CAST works on both).
	for _, e := range exprs {
		got := scalar(t, pg, "SELECT "+castLiterals(e))
		want := scalar(t, lite, "SELECT "+e)
		if got != want {
			t.Errorf("%s: PostgreSQL %q, SQLite %q", e, got, want)
		}
	}
	for _, d := range docs {
		q := fmt.Sprintf("SELECT key, value, type FROM json_each('%s') ORDER BY 1", d)
		if d == docs[1] || d == docs[2] { // array keys are integers in SQLite, text in PostgreSQL
			q = fmt.Sprintf("SELECT key, value, type FROM json_each('%s') ORDER BY CAST(key AS INTEGER)", d)
		}
		_, want, err := queryAll(ctx, lite, q)
		if err != nil {
			t.Fatal(err)
		}
		_, got, err := queryAll(ctx, pg, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if fmt.Sprint(texts(got)) != fmt.Sprint(texts(want)) {
			t.Errorf("%s:\nPostgreSQL %q\nSQLite     %q", q, texts(got), texts(want))
		}
	}
}

// castLiterals makes the time argument of date(), datetime() and strftime() text for
// PostgreSQL, where a bare literal could be read as a date.
func castLiterals(e string) string {
	for _, f := range []string{"date('", "datetime('"} {
		if len(e) > len(f) && e[:len(f)] == f {
			end := len(f)
			for e[end] != '\'' {
				end++
			}
			return e[:len(f)-1] + "CAST('" + e[len(f):end] + "' AS TEXT)" + e[end+1:]
		}
	}
	return e
}

// scalar returns the one value of a query as text, or the error.
func scalar(t *testing.T, db *store.DB, q string) string {
	t.Helper()
	_, rows, err := queryAll(context.Background(), db, q)
	if err != nil {
		return "error: " + err.Error()
	}
	if len(rows) != 1 || len(rows[0]) != 1 {
		t.Fatalf("%s: %v, want one value", q, rows)
	}
	return text(rows[0][0])
}

// text prints a value as PostgreSQL's text results show it ("NULL" for NULL).
func text(v any) string {
	switch v := v.(type) {
	case nil:
		return "NULL"
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		if v == 0 {
			return "0" // SQLite rounds small negatives to -0; PostgreSQL has no negative zero
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	case []byte:
		return string(v)
	}
	return fmt.Sprint(v)
}

func texts(rows [][]any) [][]string {
	out := make([][]string, len(rows))
	for i, r := range rows {
		for _, v := range r {
			out[i] = append(out[i], text(v))
		}
	}
	return out
}
