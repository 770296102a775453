package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"

	"github.com/stile-run/stile/examples/emails/handler"
	"github.com/stile-run/stile/worker"
)

type printMailer struct{}

func (printMailer) Send(_ context.Context, key, to, subject, _ string) error {
	fmt.Printf("send %q to %s (idempotency key %s)\n", subject, to, key)
	return nil
}

func main() {
	url := flag.String("url", "http://127.0.0.1:8787", "Stile API")
	tenants := flag.String("tenant", "acme", "comma-separated tenants")
	flag.Parse()
	w, err := worker.New(worker.Config{URL: *url, Token: os.Getenv("STILE_TOKEN"),
		Tenants: strings.Split(*tenants, ","), Queues: []string{"email"}})
	if err != nil {
		log.Fatal(err)
	}
	worker.Handle(w, handler.Handler(printMailer{}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := w.Run(ctx); err != nil {
		log.Fatal(err)
	}
}
