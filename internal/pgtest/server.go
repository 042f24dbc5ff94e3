// Package pgtest runs a private PostgreSQL server for chainplan's tests: a cluster made by
// initdb in a temporary folder, listening on a loopback port only, stopped (and its folder
// removed) at the end. When the environment names a server already (EnvDSN, as `make test`
// does for every package at once), tests use that one instead.
//
// Each test gets an empty schema of its own (NewStore): one CREATE SCHEMA instead of a
// database, and the store's DSN names it in search_path, as a team keeping several stores
// in one database would.
//
// The server's binaries come from Debian's postgresql package (/usr/lib/postgresql/N/bin,
// the newest N) or from PATH; CHAINPLAN_PG_BIN names their folder explicitly. PostgreSQL
// refuses to run as root: a root process runs initdb and postgres as the postgres user
// (or nobody when there is none).
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvDSN names the environment variable holding the superuser DSN of a running server
// that tests use instead of starting their own.
const EnvDSN = "CHAINPLAN_TEST_PG"

// EnvBin names the environment variable holding the folder of initdb and postgres.
const EnvBin = "CHAINPLAN_PG_BIN"

// Role is the login role the stores of tests connect as: not a superuser, so that the
// privileges the store grants and relies on are the ones checked. It may create roles
// (the store's reader role) and schemas.
const Role = "chainplan_test"

// Server is a PostgreSQL server for tests.
type Server struct {
	// AdminDSN connects as a superuser to the server's postgres database.
	AdminDSN string
	dir      string        // the cluster's folder; empty for a server this process did not start
	cmd      *exec.Cmd     // the postmaster; nil for a server this process did not start
	exited   chan struct{} // closed when the postmaster has exited
}

// Open returns the server EnvDSN names, or starts one (Start) when it names none.
func Open(ctx context.Context) (*Server, error) {
	if dsn := os.Getenv(EnvDSN); dsn != "" {
		s := &Server{AdminDSN: dsn}
		if err := s.setup(ctx); err != nil {
			return nil, fmt.Errorf("server of $%s: %w", EnvDSN, err)
		}
		return s, nil
	}
	return Start(ctx)
}

// Start creates a cluster in a new temporary folder and starts its server on a free
// loopback port. Stop it with Stop. The postmaster receives SIGQUIT (immediate shutdown)
// if this process dies first, so that no server outlives a killed test.
func Start(ctx context.Context) (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	cred, err := credential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "chainplan-pg-")
	if err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	s := &Server{dir: dir}
	if err := s.start(ctx, bin, cred); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

func (s *Server) start(ctx context.Context, bin string, cred *syscall.Credential) error {
	data, sock := filepath.Join(s.dir, "data"), filepath.Join(s.dir, "sock")
	if err := os.Mkdir(sock, 0o700); err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	if cred != nil {
		if err := chownAll(s.dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return fmt.Errorf("start postgres: %w", err)
		}
	}
	// --no-sync and the settings below trade durability for speed: the cluster is thrown
	// away after the tests.
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres",
		"--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	initdb.Dir = s.dir // the server's user may not enter the caller's folder
	if out, err := initdb.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %w\n%s", err, out)
	}
	var last error
	for range 5 { // a port found free may be taken before the server binds it
		port, err := freePort()
		if err != nil {
			return err
		}
		if last = s.launch(ctx, bin, cred, data, sock, port); last == nil {
			return nil
		}
	}
	return last
}

// launch starts the postmaster on port and waits until it accepts connections.
func (s *Server) launch(ctx context.Context, bin string, cred *syscall.Credential, data, sock string, port int) error {
	logPath := filepath.Join(s.dir, "postgres.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	defer logFile.Close()
	cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(port), "-k", sock,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off",
		"-c", "full_page_writes=off", "-c", "max_connections=300", "-c", "shared_buffers=64MB")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Dir = s.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	s.AdminDSN = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, err := pgx.Connect(ctx, s.AdminDSN)
		if err == nil {
			c.Close(ctx)
			break
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(logPath)
			return fmt.Errorf("postgres exited (%v) before accepting connections:\n%s", waitErr, log)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			_ = cmd.Process.Signal(syscall.SIGQUIT)
			<-exited
			return fmt.Errorf("postgres did not accept connections within a minute: %v", err)
		}
	}
	s.cmd, s.exited = cmd, exited
	return s.setup(ctx)
}

// setup creates Role when the server lacks it.
func (s *Server) setup(ctx context.Context) error {
	return s.admin(ctx, func(c *pgx.Conn) error {
		_, err := c.Exec(ctx, `DO $$ BEGIN
			CREATE ROLE `+Role+` LOGIN CREATEROLE;
		EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
		END $$`)
		if err != nil {
			return err
		}
		// PostgreSQL 15 no longer lets every role create in the public schema; tests
		// create their schemas in the postgres database.
		_, err = c.Exec(ctx, "GRANT CREATE ON DATABASE postgres TO "+Role)
		return err
	})
}

// admin runs fn on a superuser connection.
func (s *Server) admin(ctx context.Context, fn func(c *pgx.Conn) error) error {
	c, err := pgx.Connect(ctx, s.AdminDSN)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", s.AdminDSN, err)
	}
	defer c.Close(ctx)
	return fn(c)
}

// Stop shuts down a server this process started (fast shutdown, then immediate after
// 20 s) and removes its folder; for a server named by EnvDSN it does nothing.
func (s *Server) Stop() error {
	var err error
	if s.cmd != nil {
		_ = s.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-s.exited:
		case <-time.After(20 * time.Second):
			_ = s.cmd.Process.Signal(syscall.SIGQUIT)
			<-s.exited
			err = errors.New("postgres did not stop within 20 s; sent SIGQUIT")
		}
		s.cmd = nil
	}
	if s.dir != "" {
		err = errors.Join(err, os.RemoveAll(s.dir))
		s.dir = ""
	}
	return err
}

// Schema creates an empty schema owned by Role and returns the DSN of a store in it:
// Role's connection with search_path set to it. Names are random, so that test processes
// sharing a server never meet.
func (s *Server) Schema(ctx context.Context) (string, error) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "t_" + hex.EncodeToString(b[:])
	err := s.admin(ctx, func(c *pgx.Conn) error {
		_, err := c.Exec(ctx, "CREATE SCHEMA "+name+" AUTHORIZATION "+Role)
		return err
	})
	if err != nil {
		return "", err
	}
	return s.DSN(name), nil
}

// DSN returns the DSN of Role with search_path set to schema (none when empty).
func (s *Server) DSN(schema string) string {
	u, err := url.Parse(s.AdminDSN)
	if err != nil {
		panic(fmt.Sprintf("pgtest: bad admin DSN %q: %v", s.AdminDSN, err))
	}
	u.User = url.User(Role)
	q := u.Query()
	if schema != "" {
		q.Set("search_path", schema)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// DropSchema removes a schema made by Schema, with all it holds.
func (s *Server) DropSchema(ctx context.Context, dsn string) error {
	u, err := url.Parse(dsn)
	if err != nil {
		return err
	}
	name := u.Query().Get("search_path")
	if !strings.HasPrefix(name, "t_") {
		return fmt.Errorf("pgtest: %q is no schema of Schema", name)
	}
	return s.admin(ctx, func(c *pgx.Conn) error {
		_, err := c.Exec(ctx, "DROP SCHEMA "+name+" CASCADE")
		return err
	})
}

// binDir finds the folder of initdb and postgres: $CHAINPLAN_PG_BIN, else the newest
// /usr/lib/postgresql/N/bin, else the folder of initdb on PATH.
func binDir() (string, error) {
	if d := os.Getenv(EnvBin); d != "" {
		return d, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return vb - va
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("no PostgreSQL server binaries (initdb, postgres): install Debian's postgresql " +
		"package (`make postgres`), set " + EnvBin + " to their folder, or set " + EnvDSN + " to a server's superuser DSN")
}

// credential returns whom the server runs as: nil (this process's user) unless this
// process is root, which PostgreSQL refuses; then the postgres user, else nobody.
func credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
	}
	return nil, errors.New("running as root, and neither a postgres nor a nobody user to run PostgreSQL as")
}

func chownAll(dir string, uid, gid int) error {
	return filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}

// freePort returns a loopback TCP port nothing listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
