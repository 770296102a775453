package stiletest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stile-run/stile/client"
	"github.com/stile-run/stile/host/workerd"
	"github.com/stile-run/stile/internal/wasmbuild"
)

// Workerd is a tenant module in real workerd, the runtime of Cloudflare's
// Durable Objects, through Miniflare 4 from npm on a loopback port: the
// Worker bundle `stile build` deploys, with real time and the real alarm.
// Declare one per test binary (a package variable) and Close it from
// TestMain: Start starts it once, on first use, and later tests share it.
type Workerd struct {
	// Wasm returns the module (e.g. BuildWasm of a package); called once.
	Wasm func(testing.TB) []byte
	// Token is the bearer token of the API. Default DefaultToken.
	Token string
	// TestEntry runs the bundle with the test entry (workerd.TestEntryFile)
	// instead of the shipped one, so a test can make the module trap.
	TestEntry bool
	// Handlers is a handler package (an import path, or a ./relative
	// directory from the test's package) run as the edge executor, as
	// `stile build --handlers` builds it: pushes run its handlers inside
	// workerd, under syumai/workers.
	Handlers string
	// Vars are added to the Worker's vars (e.g. STILE_EXECUTOR_SUBREQUESTS).
	Vars map[string]string
	// Files are written into the bundle's directory; a caller.mjs runs as a
	// second Worker with a STILE service binding to this one, reached with
	// the Host header caller.test.
	Files map[string][]byte
	// Persist keeps the objects' storage in this directory: a Workerd
	// started later over it (another module, say) is the same deployment
	// upgraded. Default: in memory, gone with the Worker.
	Persist string

	once   sync.Once
	dir    string // the bundle, removed by Close
	server *workerd.Server
	skip   string
	err    error
}

// Start starts the Worker if it is not running yet and returns its URL.
// Without Node it skips the test, except under CI=true, where the workerd
// layer is required and the test fails. A failed test logs Miniflare's
// output.
func (w *Workerd) Start(tb testing.TB) string {
	tb.Helper()
	w.once.Do(func() { w.server, w.skip, w.err = w.start(tb) })
	if w.skip != "" {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("CI=true: %s", w.skip)
		}
		tb.Skip(w.skip)
	}
	if w.err != nil {
		tb.Fatal(w.err)
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("miniflare log:\n%s", w.server.Log())
		}
	})
	return strings.TrimSuffix(w.server.URL, "/")
}

func (w *Workerd) start(tb testing.TB) (*workerd.Server, string, error) {
	wasm := w.Wasm(tb)
	dir, err := os.MkdirTemp("", "stiletest-workerd-")
	if err != nil {
		return nil, "", err
	}
	w.dir = dir
	if err := workerd.WriteWorker(dir, wasm); err != nil {
		return nil, "", err
	}
	if w.Handlers != "" {
		files, err := cached("edge "+w.Handlers, func() (map[string][]byte, error) { return buildEdge(w.Handlers) })
		if err != nil {
			return nil, "", fmt.Errorf("stiletest: %w", err)
		}
		for name, b := range files {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				return nil, "", err
			}
		}
		if err := workerd.WriteEdge(dir); err != nil {
			return nil, "", err
		}
	}
	for name, b := range w.Files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return nil, "", err
		}
	}
	o := workerd.Options{Bundle: dir, Token: w.token(), Vars: w.Vars, Persist: w.Persist}
	if w.TestEntry {
		if err := workerd.WriteTestEntry(dir); err != nil {
			return nil, "", err
		}
		o.Entry = workerd.TestEntryFile
	}
	srv, err := workerd.Start(o)
	if errors.Is(err, workerd.ErrNoNode) {
		return nil, err.Error() + " (CI=true makes this a failure)", nil
	}
	return srv, "", err
}

func (w *Workerd) token() string {
	if w.Token == "" {
		return DefaultToken
	}
	return w.Token
}

// Client is a client of the running Worker (Start it first).
func (w *Workerd) Client() *client.Client {
	return client.New(w.server.URL, w.token(), nil)
}

// Log is what Miniflare and workerd have written so far: the Workers'
// console output (the edge executor's log lines among it) and errors.
func (w *Workerd) Log() string {
	if w.server == nil {
		return ""
	}
	return w.server.Log()
}

// Close stops the Worker, if it was started, and removes its bundle and
// Miniflare's temporary files.
func (w *Workerd) Close() {
	if w.server != nil {
		w.server.Close()
	}
	if w.dir != "" {
		os.RemoveAll(w.dir)
	}
}

// Dirs are the directories the Worker's files live in while it runs (its
// bundle, Miniflare's temporary files), which Close removes.
func (w *Workerd) Dirs() []string {
	dirs := []string{w.dir}
	if w.server != nil {
		dirs = append(dirs, w.server.TempDir())
	}
	return dirs
}

// buildEdge builds the edge executor of the handler package and its JS
// glue, and returns them by file name.
func buildEdge(handlers string) (map[string][]byte, error) {
	dir, err := os.MkdirTemp("", "stiletest-edge-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	if err := wasmbuild.BuildExecutor(ctx, ".", handlers, wasmbuild.Edge, filepath.Join(dir, workerd.ExecutorFile)); err != nil {
		return nil, err
	}
	if err := wasmbuild.WriteEdgeAssets(ctx, ".", handlers, dir); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	for _, e := range entries {
		if files[e.Name()], err = os.ReadFile(filepath.Join(dir, e.Name())); err != nil {
			return nil, err
		}
	}
	return files, nil
}
