package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/stile-run/stile/cmd/stile/defaultapp/handlers"
	"github.com/stile-run/stile/worker"
)

// runWork runs a worker with handlers for the built-in module's kinds, so
// the quick start can see a job go round. Your own workers use package
// worker with your handlers (see examples/).
func runWork(args []string) error {
	fs := flag.NewFlagSet("work", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: stile work [flags]\n\nRuns a worker with the built-in module's handlers (cmd/stile/defaultapp/handlers):\nfor the tenants named, or every tenant that has work, from the tenant directory.\n\nflags:")
		fs.PrintDefaults()
	}
	url := fs.String("url", "http://127.0.0.1:8787", "Stile API")
	tenants := fs.String("tenant", "", "comma-separated tenants to work for (default: every tenant, followed through the tenant directory)")
	tokenFlag := fs.String("token", "", "bearer token (default: $STILE_TOKEN, else <data>/token of stile dev)")
	data := fs.String("data", ".stile", "the data directory of stile dev, to find its token")
	concurrency := fs.Int("concurrency", 10, "handlers running at once")
	if err := fs.Parse(args); err != nil {
		return err
	}
	token, err := findToken(*data, *tokenFlag, false)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	var list []string
	if *tenants != "" {
		list = strings.Split(*tenants, ",")
	}
	w, err := worker.New(worker.Config{URL: *url, Token: token, Tenants: list,
		Concurrency: *concurrency, Logger: log})
	if err != nil {
		return err
	}
	handlers.Register(w)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	of := *tenants
	if of == "" {
		of = "every tenant that has work (from the tenant directory)"
	}
	fmt.Fprintf(os.Stderr, "stile work: worker %s claiming echo, sleep and webhook jobs and the log policy's events of %s from %s (Ctrl-C to stop)\n", w.ID(), of, *url)
	return w.Run(ctx)
}
