package store_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/chainplan/chainplan/internal/pgtest"
	"github.com/chainplan/chainplan/store"
)

// TestTargetRule: both DSN forms are PostgreSQL, a name that reads as neither a DSN nor a
// path is refused, and anything else is a SQLite path (issue 33: a keyword/value DSN was
// taken for a file name, password included).
func TestTargetRule(t *testing.T) {
	for target, postgres := range map[string]bool{
		"postgres://ann@db.lab/chainplan":                  true,
		"postgresql://db.lab/chainplan?search_path=vision": true,
		"host=db.lab user=ann password=PW dbname=x":        true,
		"  dbname = chainplan":                             true,
		"service=lab":                                      true,
		"lab.db":                                           false,
		"/data/run=3/chainplan.db":                         false, // "=" without white space: a path
		"./run=3.db":                                       false,
		"/data/my lab/chainplan.db":                        false, // white space without "=": a path
	} {
		if err := store.CheckTarget(target); err != nil || store.IsPostgres(target) != postgres {
			t.Errorf("%q: IsPostgres %v, CheckTarget %v; want PostgreSQL %v", target, store.IsPostgres(target), err, postgres)
		}
	}
	for _, target := range []string{"my dir/a=1 b=2", "'host=h' password=PW", "/tmp/x.db\x00"} {
		err := store.CheckTarget(target)
		if !errors.Is(err, store.ErrBadTarget) || store.IsPostgres(target) || strings.Contains(fmt.Sprint(err), "PW") {
			t.Errorf("%q: CheckTarget %v, want ErrBadTarget without the name's password", target, err)
		}
	}
}

func TestRedactKeywordValueDSN(t *testing.T) {
	// What pgx reads from the environment when the DSN leaves it out.
	for _, v := range []string{"PGHOST", "PGPORT", "PGUSER", "PGDATABASE", "PGAPPNAME", "PGOPTIONS", "PGSERVICE", "PGSERVICEFILE"} {
		t.Setenv(v, "")
	}
	for dsn, want := range map[string]string{
		"host=db.lab user=ann password=PW dbname=x":                              "host=db.lab port=5432 user=ann dbname=x",
		"host=db.lab port=6432 user=ann password = 'P W' dbname=x":               "host=db.lab port=6432 user=ann dbname=x",
		`host=db.lab user=ann password='a\'b PW' dbname='my db' sslmode=disable`: "host=db.lab port=5432 user=ann dbname='my db'",
		"host=db.lab user=ann dbname=x search_path=vision password=PW":           "host=db.lab port=5432 user=ann dbname=x search_path=vision",
		"lab.db":              "lab.db",
		"host=h password='PW": "(keyword/value pairs that do not parse)",
	} {
		if got := store.RedactDSN(dsn); got != want {
			t.Errorf("RedactDSN(%q) = %q, want %q", dsn, got, want)
		}
	}
}

// TestOpenRefusesBadTargets: Open refuses a name that is neither a DSN nor a path, and a
// keyword/value DSN that does not parse, without creating a file and without the password
// in the message.
func TestOpenRefusesBadTargets(t *testing.T) {
	t.Chdir(t.TempDir())
	for target, want := range map[string]error{
		"my dir/a=1 password=PW":    store.ErrBadTarget,
		"host=h password='PW":       store.ErrBadDSN,
		"host=h port=x password=PW": store.ErrBadDSN,
	} {
		_, err := store.Open(context.Background(), target, store.Options{})
		if !errors.Is(err, want) || strings.Contains(err.Error(), "PW") {
			t.Errorf("Open(%q) = %v, want %v without the password", target, err, want)
		}
	}
	if entries, _ := os.ReadDir("."); len(entries) > 0 {
		t.Errorf("Open of bad names created %s", entries[0].Name())
	}
}

// TestOpenKeywordValueDSN: the same PostgreSQL store opens by its URL and by keyword/value
// pairs, and Path names it without the password.
func TestOpenKeywordValueDSN(t *testing.T) {
	if !selectedPostgres() {
		t.Skip("-store-backends leaves PostgreSQL out")
	}
	ctx := context.Background()
	url := pgtest.NewStore(t)
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	kv := fmt.Sprintf("host=%s port=%d user=%s password=s3cret dbname=%s sslmode=disable search_path=%s",
		cfg.Host, cfg.Port, cfg.User, cfg.Database, cfg.RuntimeParams["search_path"])
	db, err := store.Open(ctx, kv, store.Options{})
	if err != nil {
		t.Fatalf("Open(%s): %v", store.RedactDSN(kv), err)
	}
	defer db.Close()
	if db.Backend() != "postgres" || strings.Contains(db.Path(), "s3cret") || !strings.Contains(db.Path(), "search_path=") {
		t.Errorf("backend %s, Path %q", db.Backend(), db.Path())
	}
	byURL, err := store.Open(ctx, url, store.Options{MustExist: true})
	if err != nil {
		t.Fatalf("the store the keyword/value DSN created, by its URL: %v", err)
	}
	byURL.Close()
}

// selectedPostgres reports whether -store-backends includes PostgreSQL.
func selectedPostgres() bool {
	for _, b := range selectedBackends() {
		if b.postgres() {
			return true
		}
	}
	return false
}
