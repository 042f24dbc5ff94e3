package store

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/jackc/pgx/v5/pgconn"
)

// ErrBadTarget reports a database name (--db, $CHAINPLAN_DB, migrate-store's --from and
// --to) that is neither a PostgreSQL DSN nor a path chainplan takes for a SQLite file. The
// CLI reports it as bad input.
var ErrBadTarget = errors.New("chainplan: bad database name")

// The one rule for what a database name is (docs/sql.md, "The file"):
//
//   - postgres://... or postgresql://...: a PostgreSQL DSN, a URL;
//   - a name that starts with keyword= (an identifier, then "="): a PostgreSQL DSN of
//     libpq's keyword/value form, "host=db.lab dbname=chainplan user=ann";
//   - any other name holding "=" and white space: refused (ErrBadTarget), for it reads as
//     a mistyped DSN as much as a path, and a DSN taken for a path would put its password
//     in a file name and in messages;
//   - anything else, with no NUL byte: the path of a SQLite file. A file whose name starts
//     with word= is named with a folder: ./run=3.db.
//
// Both DSN forms are parsed by pgx (pgconn.ParseConfig), as libpq would.
type targetKind int

const (
	sqliteFile targetKind = iota
	postgresURL
	postgresKeywords
)

// keywordStart is how a keyword/value DSN begins: libpq's keywords (host, dbname, ...)
// and server settings (search_path, application_name, ...) are identifiers.
var keywordStart = regexp.MustCompile(`^\s*[A-Za-z_][A-Za-z0-9_]*\s*=`)

// kindOf applies the rule to target.
func kindOf(target string) (targetKind, error) {
	switch {
	case strings.HasPrefix(target, "postgres://") || strings.HasPrefix(target, "postgresql://"):
		return postgresURL, nil
	case keywordStart.MatchString(target):
		return postgresKeywords, nil
	case strings.Contains(target, "=") && strings.ContainsFunc(target, unicode.IsSpace):
		// Not echoed: it may be a DSN with a password, mistyped.
		return 0, fmt.Errorf("%w: a name holding \"=\" and white space that does not start with keyword= "+
			"is neither a PostgreSQL DSN (postgres://... or keyword=value pairs: host=... dbname=...) nor a SQLite "+
			"file path chainplan takes (docs/sql.md, \"The file\")", ErrBadTarget)
	case strings.ContainsRune(target, 0):
		return 0, fmt.Errorf("%w: the database path %q holds a NUL byte", ErrBadTarget, target)
	}
	return sqliteFile, nil
}

// IsPostgres reports whether target names a PostgreSQL store (a DSN: a postgres:// or
// postgresql:// URL, or libpq keyword/value pairs) rather than the path of a SQLite file.
func IsPostgres(target string) bool {
	k, err := kindOf(target)
	return err == nil && k != sqliteFile
}

// CheckTarget refuses a database name that is neither a DSN nor a SQLite path chainplan
// takes, with an error wrapping ErrBadTarget. Open checks it too; the service checks it
// where it chooses the database, before anything is written beside it.
func CheckTarget(target string) error {
	_, err := kindOf(target)
	return err
}

// RedactDSN returns target as messages and Path show it: a path as given, a DSN without
// its password. A URL keeps its form less the password (of the user and of the query);
// keyword/value pairs are written back from what pgx parsed, password left out.
func RedactDSN(target string) string {
	k, err := kindOf(target)
	switch {
	case err != nil:
		return "(a name that is neither a DSN nor a path)"
	case k == sqliteFile:
		return target
	case k == postgresURL:
		return redactURL(target)
	}
	cfg, err := pgconn.ParseConfig(target)
	if err != nil {
		return "(keyword/value pairs that do not parse)"
	}
	pairs := []string{"host=" + quoteValue(cfg.Host), "port=" + strconv.Itoa(int(cfg.Port))}
	if cfg.User != "" {
		pairs = append(pairs, "user="+quoteValue(cfg.User))
	}
	if cfg.Database != "" {
		pairs = append(pairs, "dbname="+quoteValue(cfg.Database))
	}
	for _, k := range slices.Sorted(maps.Keys(cfg.RuntimeParams)) {
		pairs = append(pairs, k+"="+quoteValue(cfg.RuntimeParams[k]))
	}
	return strings.Join(pairs, " ")
}

// redactURL is RedactDSN of a URL.
func redactURL(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "(a URL that does not parse)"
	}
	if u.User != nil {
		u.User = url.User(u.User.Username())
	}
	q := u.Query()
	if q.Has("password") || q.Has("sslpassword") {
		q.Del("password")
		q.Del("sslpassword")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// quoteValue writes a keyword/value DSN's value as libpq reads it back: quoted when it is
// empty or holds white space, a quote or a backslash.
func quoteValue(v string) string {
	if v != "" && !strings.ContainsFunc(v, func(r rune) bool { return unicode.IsSpace(r) || r == '\'' || r == '\\' }) {
		return v
	}
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

// dsnError is the error of a DSN pgx cannot parse: its reason without the DSN, which
// pgx's message quotes with only a best-effort redaction.
func dsnError(where string, err error) error {
	reason := err.Error()
	if pe, ok := errors.AsType[*pgconn.ParseConfigError](err); ok {
		// Its message without the DSN: "cannot parse ``: " and the reason.
		bare := *pe
		bare.ConnString = ""
		reason = strings.TrimPrefix(bare.Error(), "cannot parse ``: ")
	}
	return fmt.Errorf("%w %s: %s", ErrBadDSN, where, reason)
}
