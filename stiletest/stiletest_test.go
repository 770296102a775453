package stiletest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/e2e/testapp"
	"github.com/stile-run/stile/host"
	"github.com/stile-run/stile/stiletest"
)

// testTenant is the e2e test module's main package, testapp.App() built.
const testTenant = "github.com/stile-run/stile/e2e/testapp/tenant"

var leaseToken = regexp.MustCompile(`"lease_token":"[0-9a-f]+"`)

func TestAdvanceFiresTheDueAlarm(t *testing.T) {
	t.Parallel()
	h := stiletest.New(t, stiletest.Config{App: testapp.App()})
	require.Equal(t, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), h.Now(), "the clock starts at a fixed time")
	ctx := context.Background()
	acme := h.Tenant("acme")
	at := h.Now().Add(10 * time.Second)
	job, err := acme.Enqueue(ctx, api.EnqueueRequest{Kind: "test.echo", RunAt: &at})
	require.NoError(t, err)
	require.Equal(t, api.JobState("scheduled"), job.State)
	require.Equal(t, at.UnixMilli(), h.Manager().AlarmAt("acme"))

	require.Equal(t, 0, h.Advance(9*time.Second), "nothing is due yet")
	job, err = acme.Job(ctx, job.ID)
	require.NoError(t, err)
	require.Equal(t, api.JobState("scheduled"), job.State)

	require.Equal(t, 1, h.Advance(time.Second), "the tenant's alarm ran")
	require.Equal(t, at, h.Now())
	require.Equal(t, int64(0), h.Manager().AlarmAt("acme"))
	job, err = acme.Job(ctx, job.ID)
	require.NoError(t, err)
	require.Equal(t, api.JobState("available"), job.State)
}

// The same requests, natively and under wazero, get the same answers to
// the byte (the lease token aside: it is random): the same module, the
// same clock.
var moduleVersion = regexp.MustCompile(`"module":"[0-9a-f]{12}",`)

func TestNativeAndWazeroAnswerAlike(t *testing.T) {
	t.Parallel()
	answers := func(h *stiletest.Harness) []string {
		ctx := context.Background()
		var out []string
		do := func(method, path, body string) string {
			status, b, err := h.Client().Raw(ctx, method, "/v1/t/acme/"+path, []byte(body), nil)
			require.NoError(t, err)
			// The wasm host names the module's version; Go run natively has none.
			b = moduleVersion.ReplaceAll(b, nil)
			out = append(out, method+" "+path+" "+http.StatusText(status)+" "+leaseToken.ReplaceAllString(string(b), "<token>"))
			return string(b)
		}
		do("POST", "jobs", `{"kind":"test.echo","args":{"n":1},"tags":["a"]}`)
		do("POST", "jobs", `{"kind":"test.validated","args":{}}`)
		do("POST", "jobs", `{"kind":"nope"}`)
		h.Advance(time.Second)
		var claim api.ClaimResponse
		require.NoError(t, json.Unmarshal([]byte(do("POST", "claims", `{"worker":"w1"}`)), &claim))
		require.Len(t, claim.Jobs, 1)
		rep, _ := json.Marshal(api.ReportRequest{Claim: api.Claim{Worker: "w1", Attempt: claim.Jobs[0].Attempt,
			LeaseToken: claim.Jobs[0].LeaseToken}, Outcome: "completed", Output: json.RawMessage(`{"ok":true}`)})
		h.Advance(time.Second)
		do("POST", "jobs/1/report", string(rep))
		do("GET", "jobs/1", "")
		do("GET", "jobs/2", "")
		do("GET", "status", "")
		return out
	}
	native := answers(stiletest.New(t, stiletest.Config{App: testapp.App()}))
	wazero := answers(stiletest.New(t, stiletest.Config{Package: testTenant}))
	require.Equal(t, native, wazero)
	require.Contains(t, native[len(native)-3], `"state":"completed"`)
}

// When the test ends the server is gone and the host closed.
func TestCleanupClosesTheServer(t *testing.T) {
	t.Parallel()
	var h *stiletest.Harness
	t.Run("uses", func(t *testing.T) {
		h = stiletest.New(t, stiletest.Config{App: testapp.App()})
		_, err := h.Tenant("acme").Status(context.Background())
		require.NoError(t, err)
	})
	_, err := http.Get(h.URL + "/healthz")
	require.Error(t, err, "nothing listens at the URL")
	_, err = h.Manager().Do(context.Background(), "acme", do.Request{Kind: do.KindAPI, Method: "GET", Path: "/v1/t/acme/status"})
	require.ErrorIs(t, err, host.ErrClosed)
	require.NoError(t, h.Close(), "closing again is harmless")
}

// recordingTB is a test that has failed or not, and keeps what is logged
// to it.
type recordingTB struct {
	testing.TB
	failed bool
	logged []string
}

func (r *recordingTB) Failed() bool { return r.failed }
func (r *recordingTB) Logf(format string, args ...any) {
	r.logged = append(r.logged, fmt.Sprintf(format, args...))
}

// The host's log is quiet, except in a test that failed.
func TestAFailedTestShowsTheLog(t *testing.T) {
	t.Parallel()
	for _, failed := range []bool{false, true} {
		tb := &recordingTB{failed: failed}
		t.Run(fmt.Sprint("failed=", failed), func(t *testing.T) {
			tb.TB = t
			h := stiletest.New(tb, stiletest.Config{App: testapp.App(), Fault: func(_, sql string) bool {
				return strings.HasPrefix(strings.TrimSpace(sql), "INSERT INTO stile_jobs")
			}})
			_, err := h.Tenant("acme").Enqueue(context.Background(), api.EnqueueRequest{Kind: "test.echo"})
			require.Error(t, err)
			require.Equal(t, int64(1), h.Manager().Restarts("acme"))
		})
		if !failed {
			require.Empty(t, tb.logged)
			continue
		}
		require.Len(t, tb.logged, 1)
		require.Contains(t, tb.logged[0], "tenant module failed; instance discarded")
		require.Contains(t, tb.logged[0], "tenant=acme")
	}
}

func TestRealClockRunsAlarmsByItself(t *testing.T) {
	t.Parallel()
	h := stiletest.New(t, stiletest.Config{App: testapp.App(), RealClock: true})
	at := h.Now().Add(50 * time.Millisecond)
	acme := h.Tenant("acme")
	job, err := acme.Enqueue(context.Background(), api.EnqueueRequest{Kind: "test.echo", RunAt: &at})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		j, err := acme.Job(context.Background(), job.ID)
		return err == nil && j.State == "available" && h.Manager().AlarmAt("acme") == 0
	}, 10*time.Second, 10*time.Millisecond)
}

func TestStartOutsideATest(t *testing.T) {
	t.Parallel()
	_, err := stiletest.Start(stiletest.Config{})
	require.ErrorIs(t, err, stiletest.ErrNoModule)
	_, err = stiletest.Start(stiletest.Config{App: testapp.App(), Package: testTenant})
	require.ErrorIs(t, err, stiletest.ErrTwoModules)

	h, err := stiletest.Start(stiletest.Config{App: testapp.App(), Token: "secret"})
	require.NoError(t, err)
	require.Equal(t, "secret", h.Token())
	_, err = h.Tenant("acme").Status(context.Background())
	require.NoError(t, err)
	status, _, err := h.Client().Raw(context.Background(), "GET", "/v1/t/acme/status", nil,
		http.Header{"Authorization": {"Bearer " + stiletest.DefaultToken}})
	require.NoError(t, err)
	require.Equal(t, http.StatusUnauthorized, status, "the harness's token is the one Config named")
	require.Zero(t, h.Advance(0), "Advance(0) runs what is due: nothing")
	require.NoError(t, h.Close())

	real, err := stiletest.Start(stiletest.Config{App: testapp.App(), RealClock: true})
	require.NoError(t, err)
	defer real.Close()
	require.PanicsWithValue(t, "stiletest: Advance needs the manual clock; this harness runs on the real clock",
		func() { real.Advance(time.Second) })
}
