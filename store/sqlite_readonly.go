package store

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/mattn/go-sqlite3"
)

// readOnlyDriver is go-sqlite3 with an authorizer that admits reads only. It backs every
// connection of DB.r, which also opens the file with mode=ro and sets query_only, so a
// write is refused three times over.
const readOnlyDriver = "chainplan-sqlite3-ro"

func init() {
	sql.Register(readOnlyDriver, &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		c.RegisterAuthorizer(authorizeRead)
		return nil
	}})
}

// sqliteRecursive is SQLITE_RECURSIVE, the action code of a recursive CTE, which
// go-sqlite3 does not export.
const sqliteRecursive = 33

// readPragmas are the pragmas that only report; any other pragma, and any of these with a
// value to set, is denied. Those marked true take a table or index name argument.
var readPragmas = map[string]bool{
	"table_info": true, "table_xinfo": true, "table_list": true, "index_list": true, "index_info": true,
	"index_xinfo": true, "foreign_key_list": true, "foreign_key_check": true, "integrity_check": true,
	"quick_check": true, "collation_list": false, "database_list": false, "function_list": false,
	"module_list": false, "pragma_list": false, "compile_options": false, "user_version": false,
	"schema_version": false, "application_id": false, "journal_mode": false, "page_size": false,
	"page_count": false, "freelist_count": false, "encoding": false, "foreign_keys": false,
	"query_only": false, "data_version": false,
}

// authorizeRead is the authorizer of read-only connections (sqlite3_set_authorizer): it
// allows SELECT, reading columns, functions other than load_extension, recursive CTEs and
// reporting pragmas, and denies everything else.
func authorizeRead(action int, arg1, arg2, _ string) int {
	switch action {
	case sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqliteRecursive:
		return sqlite3.SQLITE_OK
	case sqlite3.SQLITE_FUNCTION: // arg2 is the function name
		if strings.EqualFold(arg2, "load_extension") {
			return sqlite3.SQLITE_DENY
		}
		return sqlite3.SQLITE_OK
	case sqlite3.SQLITE_PRAGMA: // arg1 is the pragma, arg2 its argument
		takesArg, ok := readPragmas[strings.ToLower(arg1)]
		if ok && (arg2 == "" || takesArg) {
			return sqlite3.SQLITE_OK
		}
	}
	return sqlite3.SQLITE_DENY
}

// sqliteQueryError classifies an error of a user's query on SQLite.
func sqliteQueryError(err error) error {
	if e := argumentCountError(err); e != nil {
		return e
	}
	var se sqlite3.Error
	if errors.As(err, &se) {
		if strings.Contains(se.Error(), "not authorized") { // the authorizer's denials
			return fmt.Errorf("%w (%v)", ErrReadOnly, err)
		}
		switch se.Code {
		case sqlite3.ErrAuth, sqlite3.ErrReadonly:
			return fmt.Errorf("%w (%v)", ErrReadOnly, err)
		case sqlite3.ErrError, sqlite3.ErrRange, sqlite3.ErrMismatch, sqlite3.ErrConstraint, sqlite3.ErrTooBig:
			return fmt.Errorf("%w: %v", ErrBadQuery, err)
		}
	}
	if strings.Contains(err.Error(), "not enough args") || strings.Contains(err.Error(), "arguments") {
		return fmt.Errorf("%w: %v", ErrBadQuery, err)
	}
	return fmt.Errorf("query: %w", err)
}
