// Command withpg runs a command beside a private PostgreSQL server (package pgtest): it
// starts the server, runs the command with CHAINPLAN_TEST_PG set to the server's
// superuser DSN, stops the server and exits with the command's status. The server is
// stopped on failure and on SIGINT or SIGTERM too, and dies with withpg if withpg is
// killed. `make test-go` and `make test-py` run the tests under it, so that every package
// shares one server.
//
//	go run ./internal/pgtest/withpg -- go test ./store
//	go run ./internal/pgtest/withpg -serve   # print the DSN, serve until standard input closes
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/chainplan/chainplan/internal/pgtest"
)

func main() {
	serve := flag.Bool("serve", false, "print the server's superuser DSN and serve until standard input closes")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: withpg -- COMMAND [ARG...]\n       withpg -serve")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *serve == (flag.NArg() > 0) {
		flag.Usage()
		os.Exit(2)
	}
	os.Exit(run(*serve, flag.Args()))
}

func run(serve bool, args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv, err := pgtest.Start(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "withpg:", err)
		return 1
	}
	defer func() {
		if err := srv.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "withpg:", err)
		}
	}()
	if serve {
		fmt.Println(srv.AdminDSN)
		done := make(chan struct{})
		go func() { _, _ = io.Copy(io.Discard, bufio.NewReader(os.Stdin)); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
		}
		return 0
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), pgtest.EnvDSN+"="+srv.AdminDSN)
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "withpg:", err)
		return 1
	}
	// The command gets the signals of the terminal itself; withpg waits for it to end.
	err = cmd.Wait()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit) && exit.ExitCode() >= 0:
		return exit.ExitCode()
	}
	fmt.Fprintln(os.Stderr, "withpg:", err)
	return 1
}
