package store

// SetTestHook installs f to be called at named points of an ingest transaction ("insert
// measurements half" when half of the measurement rows are written). Tests use it to kill
// a process in the middle of an ingest.
func SetTestHook(f func(point string)) { testHook = f }
