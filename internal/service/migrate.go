package service

import (
	"context"
	"fmt"

	"github.com/chainplan/chainplan/store"
)

// MigrateStore copies the history of the database at from (which must exist) into the
// database at to (created when missing), as store.Copy does: runs already there are
// skipped, and what they gained since (plans, executions, bandwidths) is added; copying
// twice adds nothing. Either may be a SQLite path or a PostgreSQL DSN; the usual case is a
// local file into a team's PostgreSQL store. Copying a database into itself is bad input.
func MigrateStore(ctx context.Context, from, to string) (store.CopyStats, error) {
	if from == "" || to == "" {
		return store.CopyStats{}, &inputError{"migrate-store needs a database to copy from and one to copy to"}
	}
	src, err := Open(ctx, from, Options{})
	if err != nil {
		return store.CopyStats{}, fmt.Errorf("copy from: %w", err)
	}
	defer src.Close()
	dst, err := Open(ctx, to, Options{Create: true})
	if err != nil {
		return store.CopyStats{}, fmt.Errorf("copy to: %w", err)
	}
	defer dst.Close()
	if src.Path() == dst.Path() {
		return store.CopyStats{}, &inputError{fmt.Sprintf("migrate-store: %s is both the source and the destination", src.Path())}
	}
	return store.Copy(ctx, dst.db, src.db)
}
