package e2e_test

import (
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
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
	Token: token, TestEntry: true, Vars: map[string]string{"STILE_TOKEN_NEXT": nextToken, "STILE_REVOKED": "other-id,\t" + revokedID,
		"STILE_TENANT_QUOTA": strconv.Itoa(tenantQuota)}}

// ci reports whether the suite runs in CI, where the workerd layer must run.
func ci() bool { return os.Getenv("CI") == "true" }

func startWorkerd(t *testing.T) *workerdHost {
	t.Helper()
	url := theWorkerd.Start(t)
	return &workerdHost{url: url, cl: theWorkerd.Client()}
}

// parallelTests is how many of this package's tests run at once unless
// -parallel says otherwise. Most of them wait on real time (leases,
// alarms, a workerd, a browser) far more than they compute, so the default
// of one per core leaves the cores idle. More than 4 starves the shared
// workerd (one thread) of the time its scenarios' one-second leases
// allow on two busy cores.
const parallelTests = 4

func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		flag.Set("test.parallel", strconv.Itoa(parallelTests))
	}
	code := m.Run()
	theWorkerd.Close()
	theEdge.Close()
	if builtStile.dir != "" {
		os.RemoveAll(builtStile.dir)
	}
	os.Exit(code)
}

func TestWorkerd(t *testing.T) {
	t.Parallel()
	runSuite(t, startWorkerd(t))
}

// TestWorkerdObjectChecksForItself: a caller that reaches a tenant's object
// past the Worker entry (a service binding of the Tenant class) is held to
// the same token, and an object asked for another tenant's path refuses;
// neither writes anything.
func TestWorkerdObjectChecksForItself(t *testing.T) {
	t.Parallel()
	w := startWorkerd(t)
	ctx := context.Background()
	direct := func(object, path string, auth bool, body string) (int, []byte) {
		t.Helper()
		h := http.Header{}
		if auth {
			h.Set("X-Direct-Auth", "1")
		}
		status, b, err := w.cl.Raw(ctx, "POST", "/__direct/"+object+path, []byte(body), h)
		require.NoError(t, err)
		return status, b
	}
	enqueue := `{"kind":"test.echo"}`
	status, b := direct("direct-a", "/v1/t/direct-a/jobs", false, enqueue)
	require.Equal(t, http.StatusUnauthorized, status, string(b))
	require.Equal(t, string(api.Unauthorized.AppendJSON(nil)), string(b))

	status, b = direct("direct-a", "/v1/t/direct-b/jobs", true, enqueue)
	require.Equal(t, http.StatusBadRequest, status, string(b))
	require.Equal(t, string(api.WrongObject.AppendJSON(nil)), string(b))

	for _, tenant := range []string{"direct-a", "direct-b"} {
		_, err := w.cl.Tenant(tenant).List(ctx, "", "", "", "", 0)
		requireCode(t, err, http.StatusNotFound, api.CodeTenantNotFound) // the refused requests created nothing
	}
	// With the token and its own path, the object serves the caller.
	status, b = direct("direct-a", "/v1/t/direct-a/jobs", true, enqueue)
	require.Equal(t, http.StatusCreated, status, string(b))
}

// TestWorkerdErasureLeavesTheDirectoryAtOnce: an erasure answers once the
// Directory object forgot the tenant, so a listing right after it does
// not name the tenant. The tenant's object sent the note in the
// background and answered at once: with the directory slow to take the
// note, the erased tenant was still listed.
func TestWorkerdErasureLeavesTheDirectoryAtOnce(t *testing.T) {
	t.Parallel()
	w := startWorkerd(t)
	ctx := context.Background()
	const name = "erased-from-directory"
	_, err := w.cl.Tenant(name).Enqueue(ctx, api.EnqueueRequest{Kind: "test.echo"})
	require.NoError(t, err)
	listed := func() bool {
		page, err := w.cl.Tenants(ctx, api.TenantsQuery{After: name[:len(name)-1], Limit: 10})
		require.NoError(t, err)
		for _, ti := range page.Tenants {
			if ti.Name == name {
				return true
			}
		}
		return false
	}
	require.Eventually(t, listed, time.Minute, 20*time.Millisecond, "the first use noted the tenant")

	// Only erasure notes are held, so other tests sharing this workerd
	// are not slowed.
	status, b, err := w.cl.Raw(ctx, "POST", "/__directory_delay", []byte(`{"ms":1000}`), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusNoContent, status, string(b))
	defer w.cl.Raw(ctx, "POST", "/__directory_delay", []byte(`{"ms":0}`), nil)
	_, err = w.cl.Tenant(name).Erase(ctx)
	require.NoError(t, err)
	require.False(t, listed(), "the directory lists the tenant right after its erasure")
}
