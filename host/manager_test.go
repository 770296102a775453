package host_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/e2e/testapp"
	"github.com/stile-run/stile/host"
	"github.com/stile-run/stile/stiletest"
)

// newHarness runs the test module natively, with at most two engines open.
func newHarness(t *testing.T, cfg stiletest.Config) *stiletest.Harness {
	t.Helper()
	cfg.App, cfg.MaxOpen = testapp.App(), 2
	return stiletest.New(t, cfg)
}

func call(t *testing.T, m *host.Manager, tenant, method, rest string, body any) do.Response {
	t.Helper()
	var b []byte
	if body != nil {
		b, _ = json.Marshal(body)
	}
	path, query, _ := strings.Cut(rest, "?")
	resp, err := m.Do(context.Background(), tenant, do.Request{Kind: do.KindAPI, Method: method,
		Path: "/v1/t/" + tenant + "/" + path, Query: query, Body: b})
	require.NoError(t, err)
	return resp
}

func TestAlarmSurvivesRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h := newHarness(t, stiletest.Config{DataDir: dir})
	m := h.Manager()
	at := h.Now().Add(10 * time.Second)
	resp := call(t, m, "acme", "POST", "jobs", api.EnqueueRequest{Kind: "test.echo", RunAt: &at})
	require.Equal(t, 201, resp.Status)
	require.Equal(t, at.UnixMilli(), m.AlarmAt("acme"))
	require.NoError(t, h.Close())

	h2 := newHarness(t, stiletest.Config{DataDir: dir, Now: h.Now()})
	m2 := h2.Manager()
	require.Equal(t, at.UnixMilli(), m2.AlarmAt("acme"), "the alarm was persisted")
	require.Equal(t, 1, h2.Advance(10*time.Second), "it fires without any request")
	require.Equal(t, int64(0), m2.AlarmAt("acme"))
	var j api.Job
	require.NoError(t, json.Unmarshal(call(t, m2, "acme", "GET", "jobs/1", nil).Body, &j))
	require.Equal(t, "available", j.State)
}

func TestEvictionKeepsData(t *testing.T) {
	t.Parallel()
	m := newHarness(t, stiletest.Config{}).Manager()
	for _, tenant := range []string{"a", "b", "c", "a", "b", "c"} { // MaxOpen 2: each open evicts one
		resp := call(t, m, tenant, "POST", "jobs", api.EnqueueRequest{Kind: "test.echo"})
		require.Equal(t, 201, resp.Status)
	}
	st := m.Stats()
	require.Equal(t, int64(6), st.Opens, "each request found its tenant closed")
	require.Equal(t, int64(4), st.Evictions)
	require.Equal(t, 2, st.Open)
	for _, tenant := range []string{"a", "b", "c"} {
		var j api.Job
		require.NoError(t, json.Unmarshal(call(t, m, tenant, "GET", "jobs/2", nil).Body, &j))
		require.Equal(t, "2", j.ID, "tenant %s kept both jobs across eviction", tenant)
	}
}

func TestHeldClaimWakesOnEnqueueAndEndsWithItsContext(t *testing.T) {
	t.Parallel()
	m := newHarness(t, stiletest.Config{}).Manager()
	claim, _ := json.Marshal(api.ClaimRequest{Worker: "w", WaitMs: 30_000})
	done := make(chan do.Response, 1)
	go func() {
		resp, err := m.Do(context.Background(), "acme", do.Request{Kind: do.KindAPI, Method: "POST", Path: "/v1/t/acme/claims", Body: claim})
		require.NoError(t, err)
		done <- resp
	}()
	time.Sleep(100 * time.Millisecond)
	call(t, m, "acme", "POST", "jobs", api.EnqueueRequest{Kind: "test.echo"})
	select {
	case resp := <-done:
		var c api.ClaimResponse
		require.NoError(t, json.Unmarshal(resp.Body, &c))
		require.Len(t, c.Jobs, 1)
	case <-time.After(10 * time.Second):
		t.Fatal("the held claim was not woken")
	}

	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		resp, err := m.Do(ctx, "acme", do.Request{Kind: do.KindAPI, Method: "POST", Path: "/v1/t/acme/claims", Body: claim})
		require.NoError(t, err)
		done <- resp
	}()
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case resp := <-done:
		require.Equal(t, 200, resp.Status, "a caller that goes away gets the empty claim")
	case <-time.After(10 * time.Second):
		t.Fatal("the held claim ignored its context")
	}
}

func TestFailedAlarmIsRetriedLater(t *testing.T) {
	t.Parallel()
	var broken atomic.Bool
	h := newHarness(t, stiletest.Config{Fault: func(_, sql string) bool {
		return broken.Load() && strings.Contains(sql, "SET state = 'available'")
	}})
	m, clock := h.Manager(), h.Clock()
	at := h.Now().Add(time.Second)
	call(t, m, "acme", "POST", "jobs", api.EnqueueRequest{Kind: "test.echo", RunAt: &at})
	broken.Store(true)
	require.Equal(t, 1, h.Advance(time.Second))
	require.Equal(t, int64(1), m.Restarts("acme"), "the trapped alarm discarded the instance")
	require.Greater(t, m.AlarmAt("acme"), clock.Now(), "the alarm is retried later, not in a hot loop")
	broken.Store(false)
	require.Equal(t, 1, h.Advance(time.Minute))
	var j api.Job
	require.NoError(t, json.Unmarshal(call(t, m, "acme", "GET", "jobs/1", nil).Body, &j))
	require.Equal(t, "available", j.State)
}

func TestInvalidTenantIsRefused(t *testing.T) {
	t.Parallel()
	m := newHarness(t, stiletest.Config{}).Manager()
	_, err := m.Do(context.Background(), "../etc", do.Request{Kind: do.KindAPI, Method: "GET", Path: "/v1/t/../etc/status"})
	require.ErrorContains(t, err, "invalid tenant name")
}
