package e2e_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/client"
	"github.com/stile-run/stile/host"
	"github.com/stile-run/stile/stiletest"
)

// token is the bearer token of every test host.
const token = "test-token-0123456789-abcdefghijklmn"

// target is one host the conformance suite runs against: the native
// in-process host, the built tenant.wasm under wazero, or workerd.
type target interface {
	client() *client.Client
	// advance lets d pass: a controlled clock moves and due alarms run at
	// once; in workerd real time passes and the real alarm fires by itself.
	advance(t *testing.T, d time.Duration)
	// realTime reports whether time is real (workerd), so assertions that
	// depend on the alarm must poll.
	realTime() bool
	// inProcess is the manager of a Go host, or nil.
	inProcess() *inProcess
	// injectFault makes the tenant's module trap at the nth statement that
	// starts with prefix (a test-only host option in each host).
	injectFault(t *testing.T, tenant, prefix string, nth int)
}

// inProcess is a Go host (native or wazero) behind the HTTP server on a
// loopback port, with a clock the test controls: a stiletest harness.
type inProcess struct {
	h       *stiletest.Harness
	clock   *host.ManualClock
	manager *host.Manager
	cl      *client.Client
	faults  *faults
}

func (p *inProcess) client() *client.Client { return p.cl }
func (p *inProcess) realTime() bool         { return false }
func (p *inProcess) inProcess() *inProcess  { return p }
func (p *inProcess) injectFault(t *testing.T, tenant, prefix string, nth int) {
	var seen int
	p.faults.set(tenant, func(sql string) bool {
		if strings.HasPrefix(strings.TrimSpace(sql), prefix) {
			seen++
			return seen == nth
		}
		return false
	})
}

func (p *inProcess) advance(t *testing.T, d time.Duration) {
	t.Helper()
	p.h.Advance(d)
}

// start is the controlled clock's start: a fixed, recognisable time.
var start = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// testTenant is the test module's main package, built to .wasm for the
// wazero and workerd hosts.
const testTenant = "github.com/stile-run/stile/e2e/testapp/tenant"

// Every host of the suite accepts nextToken (a rotation under way) and
// refuses scoped tokens with the id revokedID.
// A token scoped to a tenant prefix may have tenantQuota tenants.
const (
	nextToken   = "test-token-next-0123456789-abcdefgh"
	revokedID   = "revoked-1"
	tenantQuota = 2
)

// newInProcess starts the module cfg names on a harness with the suite's
// token; f, if set, is where the suite injects faults.
func newInProcess(t testing.TB, cfg stiletest.Config, f *faults) *inProcess {
	cfg.Token, cfg.Now = token, start
	cfg.NextToken, cfg.Revoked = nextToken, []string{revokedID}
	cfg.TenantQuota = tenantQuota
	if f != nil {
		cfg.Fault = f.check
	}
	h := stiletest.New(t, cfg)
	return &inProcess{h: h, clock: h.Clock(), manager: h.Manager(), cl: h.Client(), faults: f}
}

// faults injects traps per tenant through a host's test-only Fault option.
type faults struct {
	mu   sync.Mutex
	fn   map[string]func(sql string) bool
	hits map[string]int
}

func newFaults() *faults { return &faults{fn: map[string]func(string) bool{}, hits: map[string]int{}} }

// fired is how many traps the tenant's module took.
func (f *faults) fired(tenant string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hits[tenant]
}

func (f *faults) set(tenant string, fn func(sql string) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fn[tenant] = fn
}

func (f *faults) check(tenant, sql string) bool {
	f.mu.Lock()
	fn := f.fn[tenant]
	f.mu.Unlock()
	if fn == nil || !fn(sql) {
		return false
	}
	f.mu.Lock()
	f.hits[tenant]++
	f.mu.Unlock()
	return true
}

// eventually asserts cond: at once under a controlled clock, within a
// bounded poll in real time.
func eventually(t *testing.T, tg target, cond func() bool, msg string) {
	t.Helper()
	if !tg.realTime() {
		require.True(t, cond(), msg)
		return
	}
	require.Eventually(t, cond, 20*time.Second, 100*time.Millisecond, msg)
}

// stileCommand is the stile command, built once per test binary into a
// directory TestMain removes (linking it is seconds of each test using it).
func stileCommand(t *testing.T) string {
	t.Helper()
	builtStile.once.Do(func() {
		builtStile.dir, builtStile.err = os.MkdirTemp("", "stile-e2e-")
		if builtStile.err != nil {
			return
		}
		builtStile.bin = filepath.Join(builtStile.dir, "stile")
		builtStile.out, builtStile.err = exec.Command("go", "build", "-o", builtStile.bin, "../cmd/stile").CombinedOutput()
	})
	require.NoError(t, builtStile.err, "%s", builtStile.out)
	return builtStile.bin
}

var builtStile struct {
	once     sync.Once
	dir, bin string
	out      []byte
	err      error
}

// wazeroCache is where the tests' hosts keep wazero's compiled code
// between runs: the directory stiletest's own hosts use.
func wazeroCache() string { return filepath.Join(os.TempDir(), "stile-test-wazero-cache") }
