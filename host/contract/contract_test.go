package contract_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/host"
	"github.com/stile-run/stile/host/contract"
	"github.com/stile-run/stile/host/native"
	"github.com/stile-run/stile/stiletest"
)

const token = "contract-token-0123456789-abcdefghij"

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// target is one host running the contract guest behind HTTP.
type target struct {
	url string
	// advance lets d pass: a controlled clock moves and due alarms fire at
	// once (Go hosts); real time passes in workerd.
	advance func(d time.Duration)
	real    bool
	wasm    bool          // the module is wasm (its host names its version)
	manager *host.Manager // the Go hosts'
}

// guest is the contract guest module's package.
const guest = "github.com/stile-run/stile/host/contract/guest"

func TestNative(t *testing.T) {
	t.Parallel()
	f, err := native.New(native.Config{Guest: func(h do.Host) native.Guest { return contract.New(h) }, Logger: quiet})
	require.NoError(t, err)
	run(t, inProcess(t, stiletest.Config{Factory: f}))
}

func TestWazero(t *testing.T) {
	t.Parallel()
	tg := inProcess(t, stiletest.Config{Package: guest})
	tg.wasm = true
	run(t, tg)
}

func TestWorkerd(t *testing.T) {
	t.Parallel()
	url := theWorkerd.Start(t)
	run(t, &target{url: url, real: true, wasm: true, advance: func(d time.Duration) { time.Sleep(d) }})
}

// inProcess is a Go host behind HTTP with a manual clock.
func inProcess(t *testing.T, cfg stiletest.Config) *target {
	cfg.Token = token
	h := stiletest.New(t, cfg)
	return &target{url: h.URL, manager: h.Manager(), advance: func(d time.Duration) { h.Advance(d) }}
}

// theWorkerd serves the guest's bundle to the workerd tests of this binary.
var theWorkerd = &stiletest.Workerd{Wasm: func(tb testing.TB) []byte { return stiletest.BuildWasm(tb, guest) }, Token: token}

func TestMain(m *testing.M) {
	code := m.Run()
	theWorkerd.Close()
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
