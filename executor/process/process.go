package process

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/stile-run/stile/executor"
	"github.com/stile-run/stile/worker"
)

// Ready is the line Main prints on stdout once it listens.
type Ready struct {
	URL string `json:"url"`
}

// Main runs the executor until SIGINT or SIGTERM, then lets running
// handlers finish; it exits the process on a configuration error.
func Main(register func(*worker.Worker)) {
	if err := run(register); err != nil {
		fmt.Fprintln(os.Stderr, "stile executor:", err)
		os.Exit(1)
	}
}

func run(register func(*worker.Worker)) error {
	url, token := os.Getenv("STILE_URL"), os.Getenv("STILE_TOKEN")
	if url == "" || token == "" {
		return errors.New("STILE_URL and STILE_TOKEN must be set (stile dev --handlers sets them)")
	}
	concurrency := 10
	if v := os.Getenv("STILE_EXECUTOR_CONCURRENCY"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return fmt.Errorf("STILE_EXECUTOR_CONCURRENCY is %q: set a positive whole number", v)
		}
		concurrency = n
	}
	addr := os.Getenv("STILE_EXECUTOR_ADDR")
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("executor", "process")
	tr := tracing(log)
	defer tr.Shutdown()
	w, err := worker.New(worker.Config{URL: url, Token: token, Concurrency: concurrency, Logger: log,
		Tracer: tr.Tracer, HTTPClient: tracedClient(tr, concurrency)})
	if err != nil {
		return err
	}
	register(w)
	h := executor.New(w, executor.Config{Token: token, Logger: log, AfterPush: tr.Flush})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	line, _ := json.Marshal(Ready{URL: "http://" + ln.Addr().String()})
	fmt.Println(string(line))
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	h.Wait()
	return nil
}
