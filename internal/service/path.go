package service

import (
	"os"
	"path/filepath"
)

// EnvDB names the environment variable that chooses the database file.
const EnvDB = "CHAINPLAN_DB"

// DBPath is the one rule for where the database lives: flag (the CLI's --db) when not
// empty, else env (the value of $CHAINPLAN_DB) when not empty, else
// home/.chainplan/chainplan.db. It takes the environment as arguments because a Go
// runtime loaded into Python sees the environment of the moment it was loaded, not
// Python's later changes: pybind passes the values Python reads at each call.
func DBPath(flag, env, home string) (string, error) {
	switch {
	case flag != "":
		return flag, nil
	case env != "":
		return env, nil
	case home == "":
		return "", &inputError{"no home directory to keep the database in; set --db or " + EnvDB}
	}
	return filepath.Join(home, ".chainplan", "chainplan.db"), nil
}

// DefaultDBPath is DBPath with no flag and this process's environment.
func DefaultDBPath() (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		home = ""
	}
	return DBPath("", os.Getenv(EnvDB), home)
}
