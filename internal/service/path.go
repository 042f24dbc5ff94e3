package service

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/chainplan/chainplan/store"
)

// EnvDB names the environment variable that chooses the database: the path of a SQLite
// file, or a PostgreSQL DSN (postgres://user@host/db, or host=... dbname=...).
const EnvDB = "CHAINPLAN_DB"

// DBPath is the one rule for where the database lives: flag (the CLI's --db) when not
// empty, else env (the value of $CHAINPLAN_DB) when not empty, else
// home/.chainplan/chainplan.db. Either value may be a PostgreSQL DSN (store.IsPostgres:
// a URL or keyword/value pairs), returned as given; a value that is neither a DSN nor a
// path chainplan takes (store.CheckTarget) is bad input, refused before anything is
// written beside it; anything else is the path of a SQLite file. It takes the environment
// as arguments because a Go runtime loaded into Python sees the environment of the moment
// it was loaded, not Python's later changes: pybind passes the values Python reads at
// each call. Open applies the same rule to the --db it is given.
func DBPath(flag, env, home string) (string, error) {
	var db string
	switch {
	case flag != "":
		db = flag
	case env != "":
		db = env
	case home == "":
		return "", &inputError{"no home directory to keep the database in; set --db or " + EnvDB}
	default:
		return filepath.Join(home, ".chainplan", "chainplan.db"), nil
	}
	if err := store.CheckTarget(db); err != nil {
		return "", &inputError{strings.TrimPrefix(err.Error(), "chainplan: ")}
	}
	return db, nil
}

// DefaultDBPath is DBPath with no flag and this process's environment.
func DefaultDBPath() (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		home = ""
	}
	return DBPath("", os.Getenv(EnvDB), home)
}

// DataDir is the local folder of chainplan's files beside the database (profiles written
// by Python go to its profiles/ folder): the folder of a SQLite database file, or
// home/.chainplan when the database is a PostgreSQL store; never a folder named after a
// DSN.
func DataDir(db, home string) (string, error) {
	if err := store.CheckTarget(db); err != nil {
		return "", &inputError{strings.TrimPrefix(err.Error(), "chainplan: ")}
	}
	if !store.IsPostgres(db) {
		return filepath.Dir(db), nil
	}
	if home == "" {
		return "", &inputError{"no home directory to keep profiles in, and the database " + store.RedactDSN(db) + " is no folder"}
	}
	return filepath.Join(home, ".chainplan"), nil
}
