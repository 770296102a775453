package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/client"
	"github.com/stile-run/stile/host/workerd"
	"github.com/stile-run/stile/stiletest"
)

// workerd is the real Cloudflare runtime, through Miniflare 4 from npm,
// serving the Worker bundle of the test module on a loopback port.
type workerdHost struct {
	url string
	cl  *client.Client
}

func (w *workerdHost) client() *client.Client                { return w.cl }
func (w *workerdHost) realTime() bool                        { return true }
func (w *workerdHost) inProcess() *inProcess                 { return nil }
func (w *workerdHost) advance(t *testing.T, d time.Duration) { time.Sleep(d) }

// injectFault traps the tenant's module at the nth statement starting with
// prefix, through the test-only entry (host/workerd/js/faults.mjs).
func (w *workerdHost) injectFault(t *testing.T, tenant, prefix string, nth int) {
	body, _ := json.Marshal(map[string]any{"prefix": prefix, "nth": nth})
	status, b, err := w.cl.Raw(context.Background(), "POST", "/v1/t/"+tenant+"/__faults", body, nil)
	require.NoError(t, err)
	require.Equal(t, 204, status, string(b))
}

var (
	workerdOnce   sync.Once
	workerdT      *workerdHost
	workerdSkip   string
	workerdErr    error
	workerdServer *workerd.Server
)

// ci reports whether the suite runs in CI, where the workerd layer must run.
func ci() bool { return os.Getenv("CI") == "true" }

// startWorkerd builds the bundle and starts Miniflare once per test binary.
// Without Node it skips, except under CI=true, where it fails.
func startWorkerd(t *testing.T) *workerdHost {
	t.Helper()
	wasm := stiletest.BuildWasm(t, testTenant)
	workerdOnce.Do(func() {
		root, err := filepath.Abs("..")
		if err != nil {
			workerdErr = err
			return
		}
		dir, err := os.MkdirTemp("", "stile-workerd-")
		if err != nil {
			workerdErr = err
			return
		}
		if err := workerd.WriteWorker(dir, wasm); err != nil {
			workerdErr = err
			return
		}
		faults, err := os.ReadFile(filepath.Join(root, "host", "workerd", "js", "faults.mjs"))
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, "faults.mjs"), faults, 0o644)
		}
		if err != nil {
			workerdErr = err
			return
		}
		srv, err := workerd.Start(workerd.Options{Root: root, Bundle: dir, Token: token, Entry: "faults.mjs"})
		if errors.Is(err, workerd.ErrNoNode) {
			workerdSkip = err.Error() + " (CI=true makes this a failure)"
			return
		}
		if err != nil {
			workerdErr = err
			return
		}
		workerdServer = srv
		workerdT = &workerdHost{url: srv.URL, cl: client.New(srv.URL, token, nil)}
	})
	if workerdSkip != "" {
		if ci() {
			t.Fatalf("CI=true: %s", workerdSkip)
		}
		t.Skip(workerdSkip)
	}
	require.NoError(t, workerdErr)
	return workerdT
}

func TestMain(m *testing.M) {
	code := m.Run()
	if workerdServer != nil {
		workerdServer.Close()
	}
	os.Exit(code)
}

func TestWorkerd(t *testing.T) {
	t.Parallel()
	w := startWorkerd(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("miniflare log:\n%s", workerdServer.Log())
		}
	})
	runSuite(t, w)
}
