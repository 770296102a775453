package contract_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/host"
	"github.com/stile-run/stile/host/contract"
	"github.com/stile-run/stile/host/native"
	"github.com/stile-run/stile/host/wazerohost"
	"github.com/stile-run/stile/host/workerd"
	"github.com/stile-run/stile/internal/wasmbuild"
	"github.com/stile-run/stile/server"
)

const token = "contract-token"

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// target is one host running the contract guest behind HTTP.
type target struct {
	url string
	// advance lets d pass: a controlled clock moves and due alarms fire at
	// once (Go hosts); real time passes in workerd.
	advance func(d time.Duration)
	real    bool
	manager *host.Manager // the Go hosts'
}

func TestNative(t *testing.T) {
	t.Parallel()
	f, err := native.New(native.Config{Guest: func(h do.Host) native.Guest { return contract.New(h) }, Logger: quiet})
	require.NoError(t, err)
	run(t, inProcess(t, f))
}

func TestWazero(t *testing.T) {
	t.Parallel()
	f, err := wazerohost.New(context.Background(), wazerohost.Config{Wasm: guestWasm(t), Logger: quiet,
		CacheDir: filepath.Join(os.TempDir(), "stile-test-wazero-cache")})
	require.NoError(t, err)
	run(t, inProcess(t, f))
}

func TestWorkerd(t *testing.T) {
	t.Parallel()
	run(t, startWorkerd(t))
}

// inProcess is a Go host: the server over a manager with a manual clock.
func inProcess(t *testing.T, f host.Factory) *target {
	clock := host.NewManualClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixMilli())
	m, err := host.NewManager(host.Config{Factory: f, Clock: clock, DataDir: t.TempDir(), Logger: quiet})
	require.NoError(t, err)
	srv, err := server.New(m, token)
	require.NoError(t, err)
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		ts.Close()
		require.NoError(t, m.Close())
	})
	return &target{url: ts.URL, manager: m, advance: func(d time.Duration) {
		clock.Advance(d)
		m.FireDue(context.Background())
	}}
}

var (
	wasmOnce sync.Once
	wasm     []byte
	wasmErr  error
)

// guestWasm builds the guest module once per test binary.
func guestWasm(t *testing.T) []byte {
	t.Helper()
	wasmOnce.Do(func() {
		dir, err := os.MkdirTemp("", "stile-contract-")
		if err != nil {
			wasmErr = err
			return
		}
		path := filepath.Join(dir, "guest.wasm")
		if wasmErr = wasmbuild.BuildWasm(context.Background(), "../..", "./host/contract/guest", path); wasmErr == nil {
			wasm, wasmErr = os.ReadFile(path)
		}
	})
	require.NoError(t, wasmErr)
	return wasm
}

var (
	workerdOnce   sync.Once
	workerdT      *target
	workerdSkip   string
	workerdErr    error
	workerdServer *workerd.Server
)

// startWorkerd starts Miniflare once per test binary over a Worker bundle
// of the guest. Without Node it skips, except under CI=true.
func startWorkerd(t *testing.T) *target {
	t.Helper()
	b := guestWasm(t)
	workerdOnce.Do(func() {
		root, err := filepath.Abs("../..")
		if err != nil {
			workerdErr = err
			return
		}
		dir, err := os.MkdirTemp("", "stile-contract-workerd-")
		if err != nil {
			workerdErr = err
			return
		}
		if workerdErr = workerd.WriteWorker(dir, b); workerdErr != nil {
			return
		}
		srv, err := workerd.Start(workerd.Options{Root: root, Bundle: dir, Token: token})
		if errors.Is(err, workerd.ErrNoNode) {
			workerdSkip = err.Error() + " (CI=true makes this a failure)"
			return
		}
		if workerdErr = err; err != nil {
			return
		}
		workerdServer = srv
		workerdT = &target{url: strings.TrimSuffix(srv.URL, "/"), real: true, advance: func(d time.Duration) { time.Sleep(d) }}
	})
	if workerdSkip != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true: %s", workerdSkip)
		}
		t.Skip(workerdSkip)
	}
	require.NoError(t, workerdErr)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("miniflare log:\n%s", workerdServer.Log())
		}
	})
	return workerdT
}

func TestMain(m *testing.M) {
	code := m.Run()
	if workerdServer != nil {
		workerdServer.Close()
	}
	os.Exit(code)
}

// reply is one HTTP answer of the guest.
type reply struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

func (tg *target) call(t *testing.T, tenant, cs, query, body string, hdr map[string]string) reply {
	t.Helper()
	u := tg.url + "/v1/t/" + tenant + "/contract/" + cs
	if query != "" {
		u += "?" + query
	}
	req, err := http.NewRequest("POST", u, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	r := reply{status: resp.StatusCode, header: resp.Header, raw: string(b)}
	_ = json.Unmarshal(b, &r.body)
	return r
}

// ok calls a case that must answer 200 and returns its body.
func (tg *target) ok(t *testing.T, tenant, cs, query, body string) map[string]any {
	t.Helper()
	r := tg.call(t, tenant, cs, query, body, nil)
	require.Equal(t, 200, r.status, r.raw)
	return r.body
}

// run runs every case against tg, each in a tenant of its own.
func run(t *testing.T, tg *target) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, tg, "c-"+c.name)
		})
	}
}

type contractCase struct {
	name string
	run  func(t *testing.T, tg *target, tenant string)
}
