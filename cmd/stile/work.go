package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/stile-run/stile/cmd/stile/defaultapp/handlers"
	"github.com/stile-run/stile/executor/process"
	"github.com/stile-run/stile/internal/wasmbuild"
)

// builtinHandlers is the handler package of the built-in module, which
// `stile work` runs in Stile's own module or when named.
const builtinHandlers = wasmbuild.DefaultPackage + "/handlers"

// runWork runs a worker that claims the work of a handler package: the
// one --handlers names, built natively and run as a child process, or the
// built-in module's, in this process.
func runWork(args []string) error {
	fs := flag.NewFlagSet("work", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: stile work --handlers PKG [flags]\n\nRuns a worker with the handlers of PKG (a package that exports Register(*worker.Worker)),\nbuilt natively: for the tenants named, or every tenant that has work, from the tenant\ndirectory. In Stile's own module, or with --handlers builtin, it runs the built-in module's\nhandlers (cmd/stile/defaultapp/handlers).\n\nflags:")
		fs.PrintDefaults()
	}
	url := fs.String("url", "http://127.0.0.1:8787", "Stile API")
	tenants := fs.String("tenant", "", "comma-separated tenants to work for (default: every tenant, followed through the tenant directory)")
	tokenFlag := fs.String("token", "", "bearer token (default: $STILE_TOKEN, else <data>/token of stile dev)")
	data := fs.String("data", ".stile", "the data directory of stile dev, to find its token")
	concurrency := fs.Int("concurrency", 10, "handlers running at once")
	handlersFlag := fs.String("handlers", "", "the handler package to run (exports Register(*worker.Worker)), or builtin (default in Stile's own module)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("unexpected argument %q: name the handler package with --handlers", fs.Arg(0))
	}
	if *concurrency <= 0 {
		return fmt.Errorf("--concurrency %d: set a positive number", *concurrency)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	pkg, err := workHandlers(ctx, *handlersFlag)
	if err != nil {
		return err
	}
	token, err := findToken(*data, *tokenFlag)
	if err != nil {
		return err
	}
	if pkg == "" {
		var list []string
		if *tenants != "" {
			list = strings.Split(*tenants, ",")
		}
		return process.RunWorker(ctx, process.WorkConfig{URL: *url, Token: token, Tenants: list, Concurrency: *concurrency,
			Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))}, handlers.Register, os.Stderr)
	}

	tmp, err := os.MkdirTemp("", "stile-work-")
	if err != nil {
		return fmt.Errorf("build the worker of %s: %w", pkg, err)
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "worker")
	if err := wasmbuild.BuildExecutor(ctx, ".", pkg, wasmbuild.Worker, bin); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return nil // stopped while it built
	}
	cmd := exec.Command(bin)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), "STILE_URL="+*url, "STILE_TOKEN="+token, "STILE_TENANTS="+*tenants,
		"STILE_CONCURRENCY="+strconv.Itoa(*concurrency))
	// Signals go on to the worker, which lets its running handlers finish.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the worker of %s: %w", pkg, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case s := <-sigs:
			cmd.Process.Signal(s)
		case err := <-done:
			var ee *exec.ExitError
			if errors.As(err, &ee) && ee.Exited() {
				// The worker said why on stderr.
				return &exitError{code: ee.ExitCode(), err: fmt.Errorf("the worker of %s exited with status %d", pkg, ee.ExitCode())}
			}
			if err != nil {
				return fmt.Errorf("the worker of %s: %w", pkg, err)
			}
			return nil
		}
	}
}

// workHandlers is the handler package stile work builds and runs, or ""
// for the built-in module's, which it runs in this process: those only in
// Stile's own module, or when named.
func workHandlers(ctx context.Context, flagValue string) (string, error) {
	switch flagValue {
	case "builtin", builtinHandlers:
		return "", nil
	case "":
		mods, err := wasmbuild.MainModules(ctx, ".")
		if err != nil {
			return "", err
		}
		if slices.Contains(mods, stileModule) {
			return "", nil
		}
		return "", errors.New("which handlers? pass --handlers ./path/to/handlers, the package that exports Register(*worker.Worker) (or --handlers builtin for the built-in module's)")
	}
	return flagValue, nil
}
