package store

import "strconv"

// SetTestHook installs f to be called at named points of an ingest transaction ("insert
// measurements half" when half of the measurement rows are written). Tests use it to kill
// a process in the middle of an ingest.
func SetTestHook(f func(point string)) { testHook = f }

// SetMaxPageCount caps the pages of a SQLite store's file (PRAGMA max_page_count on its
// one writer connection, which the store keeps open): a write past the cap fails as on a
// full disk, with SQLite's SQLITE_FULL.
func SetMaxPageCount(db *DB, pages int64) error {
	_, err := db.w.Exec("PRAGMA max_page_count = " + strconv.FormatInt(pages, 10))
	return err
}

// PageCount returns the pages of a SQLite store's file.
func PageCount(db *DB) (int64, error) {
	var n int64
	err := db.w.QueryRow("PRAGMA page_count").Scan(&n)
	return n, err
}
