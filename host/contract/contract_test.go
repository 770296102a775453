package contract_test

import (
	"bytes"
	"encoding/json"
	"errors"
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

// TestNativeOverABI runs the guest natively through the guest's side of the
// ABI (do.OverABI: buffers, pending payloads, transaction frames), over
// imports that implement the host's side on the native host's storage.
func TestNativeOverABI(t *testing.T) {
	t.Parallel()
	f, err := native.New(native.Config{Guest: func(h do.Host) native.Guest {
		return &overABI{do.OverABI(&hostImports{h: h}, func(h do.Host) do.Handler { return contract.New(h) })}
	}, Logger: quiet})
	require.NoError(t, err)
	run(t, inProcess(t, stiletest.Config{Factory: f}))
}

// overABI hands each frame to a module as a host does: into the buffer the
// module gives, then through its entry.
type overABI struct{ m *do.Module }

func (o *overABI) Handle(frame []byte) []byte {
	buf, err := o.m.Buffer(int32(len(frame)))
	if err != nil {
		panic(err)
	}
	copy(buf, frame)
	out, err := o.m.Handle(int32(len(frame)))
	if err != nil {
		panic(err)
	}
	return out
}

// hostImports is the host's side of the ABI over a Host, as wazerohost
// implements it over its database: a payload goes into the guest's buffer
// when it fits, else waits for Take.
type hostImports struct {
	h       do.Host
	pending []byte
}

var errRollback = errors.New("the transaction's body asked for a rollback")

func (a *hostImports) hand(b, out []byte, isErr bool) int64 {
	a.pending = nil
	if len(b) <= len(out) {
		copy(out, b)
	} else {
		a.pending = bytes.Clone(b)
	}
	if isErr {
		return -int64(len(b)) - 1
	}
	return int64(len(b))
}

func (a *hostImports) SQL(sql string, params, out []byte) int64 {
	rows, err := a.h.Query(sql, params)
	if err != nil {
		return a.hand([]byte(err.Error()), out, true)
	}
	return a.hand(rows, out, false)
}

func (a *hostImports) Take(out []byte) {
	copy(out, a.pending)
	a.pending = nil
}

func (a *hostImports) Tx(id int32, body func(int32) int32) int64 {
	err := a.h.Tx(func() error {
		if body(id) != do.TxCommit {
			return errRollback
		}
		return nil
	})
	switch {
	case err == nil:
		return do.TxCommitted
	case errors.Is(err, errRollback):
		return do.TxRolledBack
	}
	// The host's message, as a wasm host hands it over: the Host's
	// ErrTxFailed is the guest's to add.
	msg := err.Error()
	var se *do.SQLError
	if errors.As(err, &se) {
		msg = se.Msg
	}
	a.pending = []byte(msg)
	return -int64(len(a.pending)) - 1
}

func (a *hostImports) Now() int64 { return a.h.Now() }

func (a *hostImports) Log(level do.Level, msg string) { a.h.Log(level, msg) }

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
