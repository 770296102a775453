package e2e_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/client"
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

// theWorkerd serves the test module's bundle, with the test entry that can
// inject faults, to every workerd test of this binary.
var theWorkerd = &stiletest.Workerd{Wasm: func(tb testing.TB) []byte { return stiletest.BuildWasm(tb, testTenant) },
	Token: token, TestEntry: true}

// ci reports whether the suite runs in CI, where the workerd layer must run.
func ci() bool { return os.Getenv("CI") == "true" }

func startWorkerd(t *testing.T) *workerdHost {
	t.Helper()
	url := theWorkerd.Start(t)
	return &workerdHost{url: url, cl: theWorkerd.Client()}
}

func TestMain(m *testing.M) {
	code := m.Run()
	theWorkerd.Close()
	os.Exit(code)
}

func TestWorkerd(t *testing.T) {
	t.Parallel()
	runSuite(t, startWorkerd(t))
}
