package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/url"
	"os"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/chainplan/chainplan/internal/pgtest"
)

// pgTablespace is the tablespace of the PostgreSQL full-disk cases.
const pgTablespace = "chainplan_fault_small"

// postgresFullDisk runs the full-disk cases on a PostgreSQL store whose tables live in a
// tablespace on a small tmpfs (the server's own files and log stay on its disk, so the
// server reports the full disk as an error, 53100, and keeps running). A filler table in
// the tablespace fills it; dropping it gives the space back.
func (e *env) postgresFullDisk(ctx context.Context) ([]outcome, error) {
	var dataDir string
	if err := e.admin.QueryRow(ctx, "SHOW data_directory").Scan(&dataDir); err != nil {
		return nil, err
	}
	var st syscall.Stat_t
	if err := syscall.Stat(dataDir, &st); err != nil {
		return nil, fmt.Errorf("the server's data directory is not on this machine: %w", err)
	}
	disk, err := e.mountSmall("full-pg", 16<<20)
	if err != nil {
		return nil, err
	}
	defer disk.unmount()
	if err := os.Chown(disk.dir, int(st.Uid), int(st.Gid)); err != nil {
		return nil, err
	}
	if err := os.Chmod(disk.dir, 0o700); err != nil {
		return nil, err
	}
	for _, q := range []string{
		fmt.Sprintf("CREATE TABLESPACE %s LOCATION '%s'", pgTablespace, disk.dir),
		fmt.Sprintf("GRANT CREATE ON TABLESPACE %s TO %s", pgTablespace, pgtest.Role),
	} {
		if _, err := e.admin.Exec(ctx, q); err != nil {
			return nil, fmt.Errorf("%s: %w", q, err)
		}
	}
	dsn, err := e.pg.Schema(ctx)
	if err != nil {
		return nil, err
	}
	defer func() {
		_ = e.pg.DropSchema(context.Background(), dsn)
		_, _ = e.admin.Exec(context.Background(), "DROP TABLE IF EXISTS chainplan_fault_filler")
		_, _ = e.admin.Exec(context.Background(), "DROP TABLESPACE IF EXISTS "+pgTablespace)
	}()
	u, err := url.Parse(dsn)
	if err != nil {
		return nil, err
	}
	q := u.Query()
	q.Set("default_tablespace", pgTablespace) // the store's tables go to the small disk
	u.RawQuery = q.Encode()
	t := target{postgresBackend, u.String()}
	chunk := make([]byte, 32<<10)
	fill := func(leave int64) error {
		for _, q := range []string{
			fmt.Sprintf("CREATE TABLE IF NOT EXISTS chainplan_fault_filler (b bytea) TABLESPACE %s", pgTablespace),
			"ALTER TABLE chainplan_fault_filler ALTER COLUMN b SET STORAGE EXTERNAL", // stored as written
		} {
			if _, err := e.admin.Exec(ctx, q); err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
		}
		for {
			var fs syscall.Statfs_t
			if err := syscall.Statfs(disk.dir, &fs); err != nil {
				return err
			}
			if int64(fs.Bavail)*fs.Bsize <= leave {
				return nil
			}
			_, _ = rand.Read(chunk)
			n := min(int64(len(chunk)), int64(fs.Bavail)*fs.Bsize-leave)
			_, err := e.admin.Exec(ctx, "INSERT INTO chainplan_fault_filler VALUES ($1)", chunk[:max(n, 1)])
			var pe *pgconn.PgError
			if errors.As(err, &pe) && pe.Code == "53100" {
				return nil
			}
			if err != nil {
				return err
			}
		}
	}
	free := func() error {
		// DROP, not TRUNCATE: a truncated table needs new files, and the disk is full.
		_, err := e.admin.Exec(ctx, "DROP TABLE chainplan_fault_filler")
		return err
	}
	return e.fullDiskCases(ctx, t, fill, free, "")
}
