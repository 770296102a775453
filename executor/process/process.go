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
	// Kinds and Reactions are what the handler package registered: the
	// job kinds and the policies and processes it has handlers for.
	Kinds     []string `json:"kinds"`
	Reactions []string `json:"reactions"`
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
	concurrency, err := positive("STILE_EXECUTOR_CONCURRENCY", 10)
	if err != nil {
		return err
	}
	addr := os.Getenv("STILE_EXECUTOR_ADDR")
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("executor", "process")
	tr := tracing(log)
	defer tr.Shutdown()
	w, err := newWorker(WorkConfig{URL: url, Token: token, Concurrency: concurrency, Logger: log}, tr)
	if err != nil {
		return err
	}
	register(w)
	h := executor.New(w, executor.Config{Token: token, Logger: log, AfterPush: tr.Flush})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	line, _ := json.Marshal(Ready{URL: "http://" + ln.Addr().String(), Kinds: w.Kinds(), Reactions: w.Reactions()})
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
	h.Stop() // no more claims, a lingering one ends: the running handlers finish
	h.Wait()
	return nil
}

// positive reads a positive whole number from the environment variable
// name, def if it is unset.
func positive(name string, def int) (int, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s is %q: set a positive whole number", name, v)
	}
	return n, nil
}
